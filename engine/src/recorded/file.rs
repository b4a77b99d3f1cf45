//! A recording on disk, beside the parameters' decode cache, and the binding of a recording to
//! its parameter file. The file is written to a temporary name and renamed into place (never
//! half written), and mmap'd on the next open; the image is checked against the shape hash in
//! the header, so a flipped byte or a truncation is found. [`open_for`] refuses (naming why) a
//! file that is missing, damaged, stale or made for other parameters
//! (`EngineError::RecordingParams`).
//!
//! ```text
//! 0    b"CUZKREC1"
//! 8    u32 version | u32 0
//! 16   [u8; 32] SHA-256 of the circuit key
//! 48   [u8; 32] SHA-256 of the verifying key | u64 domain, inputs, l, a, b_g1
//! 120  u64 inputs, aux, circuit rows, nnz A, nnz B, nnz C, table, marks, name bytes
//! 192  [u8; 32] shape hash (of the counts and the matrices, table and densities)
//! 224  [u8; 32] SHA-256 of bytes [0, 224) and the marks and names
//! 4096 the image (recording.rs)
//! ```

use std::fmt;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use cuzk_srs::{Origin, Srs};
use sha2::{Digest, Sha256};

use super::recording::{bytes_as_words, words_as_bytes, Counts, Recording, Sections, Store};
use crate::error::EngineError;

const MAGIC: &[u8; 8] = b"CUZKREC1";
const VERSION: u32 = 1;
const HEADER: usize = 4096;
/// No count of a sane recording reaches this (it keeps the size arithmetic of a damaged header
/// from overflowing).
const COUNT_MAX: u64 = 1 << 40;

/// What ties a recording to one parameter set: its verifying key and its section counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamsBinding {
    pub vk_hash: [u8; 32],
    /// Domain size, inputs, `l`, `a`, `b_g1` points.
    pub counts: [u64; 5],
}

impl ParamsBinding {
    pub fn of(srs: &Srs) -> ParamsBinding {
        let mut vk = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = srs.vk().write(&mut vk);
        let counts = [
            srs.domain_size(),
            srs.num_inputs(),
            srs.l().len(),
            srs.a().len(),
            srs.b_g1().len(),
        ]
        .map(|n| n as u64);
        ParamsBinding {
            vk_hash: Sha256::digest(&vk).into(),
            counts,
        }
    }
}

impl fmt::Display for ParamsBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [n, i, l, a, b] = self.counts;
        write!(
            f,
            "vk {} (domain {n}, {i} inputs, l {l}, a {a}, b {b})",
            hex(&self.vk_hash[..8])
        )
    }
}

/// Why a recording file could not be used.
#[derive(Debug)]
pub enum OpenError {
    Missing,
    /// A flipped byte, a truncation, a bad header: rebuild it.
    Damaged(String),
    /// Another format version or circuit key: rebuild it.
    Stale(String),
    /// Made for another parameter file.
    OtherParams(String),
    Io(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Missing => write!(f, "missing"),
            OpenError::Damaged(w) => write!(f, "damaged: {w}"),
            OpenError::Stale(w) => write!(f, "stale: {w}"),
            OpenError::OtherParams(w) => write!(f, "made for other parameters: {w}"),
            OpenError::Io(w) => write!(f, "{w}"),
        }
    }
}

/// Where the recording of circuit `key` against `srs` lives: beside its decode cache (`None`
/// when the parameters have no decode cache).
pub fn recording_path(srs: &Srs, key: &str) -> Option<PathBuf> {
    let cache = match srs.origin() {
        Origin::Cache(p) | Origin::Rebuilt { cache: p, .. } => p,
        Origin::InMemory { .. } => return None,
    };
    let mut name = cache.file_name()?.to_os_string();
    name.push(format!(
        ".rec-{}",
        hex(&Sha256::digest(key.as_bytes())[..8])
    ));
    Some(cache.with_file_name(name))
}

fn header(rec: &Recording, key: &str, binding: &ParamsBinding) -> Vec<u8> {
    let c = rec.counts();
    let mut h = vec![0u8; HEADER];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..48].copy_from_slice(&Sha256::digest(key.as_bytes()));
    h[48..80].copy_from_slice(&binding.vk_hash);
    let counts = [
        c.inputs,
        c.aux,
        c.circuit_rows,
        c.nnz[0],
        c.nnz[1],
        c.nnz[2],
        c.table,
        c.marks,
        c.names,
    ]
    .map(|n| n as u64);
    for (i, n) in binding.counts.iter().chain(&counts).enumerate() {
        h[80 + 8 * i..88 + 8 * i].copy_from_slice(&n.to_le_bytes());
    }
    h[192..224].copy_from_slice(rec.shape_hash());
    let sum = checksum(&h, rec.image(), &Sections::of(c));
    h[224..256].copy_from_slice(&sum);
    h
}

fn checksum(h: &[u8], image: &[u64], s: &Sections) -> [u8; 32] {
    let mut d = Sha256::new();
    d.update(&h[..224]);
    d.update(words_as_bytes(&image[s.marks.start..s.names.end]));
    d.finalize().into()
}

/// Writes `rec` to `path` through a temporary file and a rename.
pub fn save(
    rec: &Recording,
    path: &Path,
    key: &str,
    binding: &ParamsBinding,
) -> Result<(), EngineError> {
    let io = |e: std::io::Error| EngineError::RecordingFile {
        path: path.into(),
        what: e.to_string(),
    };
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(&header(rec, key, binding))?;
        f.write_all(words_as_bytes(rec.image()))?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// Maps the recording at `path` and checks it is whole, current, of circuit `key` and made for
/// the parameters `expected`.
pub fn open(path: &Path, key: &str, expected: &ParamsBinding) -> Result<Recording, OpenError> {
    let file = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            OpenError::Missing
        } else {
            OpenError::Io(e.to_string())
        }
    })?;
    // SAFETY: recordings are only ever replaced by rename, never written in place.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| OpenError::Io(e.to_string()))?;
    let damaged = |w: String| OpenError::Damaged(w);
    if map.len() < HEADER || &map[0..8] != MAGIC {
        return Err(damaged(format!(
            "{} bytes without a recording header",
            map.len()
        )));
    }
    let u64_at = |o: usize| u64::from_le_bytes(map[o..o + 8].try_into().unwrap_or_default());
    let version = u32::from_le_bytes(map[8..12].try_into().unwrap_or_default());
    if version != VERSION {
        return Err(OpenError::Stale(format!(
            "format version {version}, this build reads {VERSION}"
        )));
    }
    let n: Vec<u64> = (0..9).map(|i| u64_at(120 + 8 * i)).collect();
    if n.iter().any(|&x| x >= COUNT_MAX) {
        return Err(damaged("a count in the header is out of range".into()));
    }
    let u = |i: usize| n[i] as usize;
    let counts = Counts {
        inputs: u(0),
        aux: u(1),
        circuit_rows: u(2),
        nnz: [u(3), u(4), u(5)],
        table: u(6),
        marks: u(7),
        names: u(8),
    };
    let sections = Sections::of(&counts);
    let want = HEADER as u64 + 8 * sections.total() as u64;
    if map.len() as u64 != want {
        return Err(damaged(format!(
            "{} bytes, its header describes {want} (truncated?)",
            map.len()
        )));
    }
    let image = bytes_as_words(&map[HEADER..]);
    if checksum(&map, image, &sections)[..] != map[224..256] {
        return Err(damaged("header checksum does not match".into()));
    }
    if map[16..48] != Sha256::digest(key.as_bytes())[..] {
        return Err(OpenError::Stale(format!(
            "recorded for another circuit than {key}"
        )));
    }
    let mut vk_hash = [0u8; 32];
    vk_hash.copy_from_slice(&map[48..80]);
    let found = ParamsBinding {
        vk_hash,
        counts: std::array::from_fn(|i| u64_at(80 + 8 * i)),
    };
    if found != *expected {
        return Err(OpenError::OtherParams(format!(
            "recorded for {found}, the parameters are {expected}"
        )));
    }
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&map[192..224]);
    let rec = Recording::from_store(
        Store::Mapped {
            map,
            offset: HEADER,
        },
        counts,
        Some(&hash),
    )
    .map_err(|e| damaged(e.to_string()))?;
    Ok(rec.bind(key, found))
}

/// Opens the recording at `path` for `srs`, refusing (with an error naming why) one that is
/// missing, damaged, stale or made for other parameters.
pub fn open_for(path: &Path, key: &str, srs: &Srs) -> Result<Recording, EngineError> {
    open(path, key, &ParamsBinding::of(srs)).map_err(|e| match e {
        OpenError::OtherParams(what) => EngineError::RecordingParams {
            what: format!("{} was made for other parameters: {what}", path.display()),
        },
        e => EngineError::RecordingFile {
            path: path.into(),
            what: e.to_string(),
        },
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
