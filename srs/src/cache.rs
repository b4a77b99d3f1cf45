//! The decode cache: the proving sections already decoded into the in-memory layout, so that the
//! next open is a plain mmap. The cache is bound to its source by the source's length, mtime and a
//! SHA-256 of its verifying-key bytes, and is written to a temporary file and renamed into place,
//! so a crash never leaves a half-written cache that looks valid.
//!
//! ```text
//! 0    b"CUZKSRS1"
//! 8    u32 version | u32 flags (bit 0: subgroup-checked)
//! 16   u64 source length | i64 mtime seconds | u32 mtime nanos | u32 0
//! 40   [u8; 32] SHA-256 of the source bytes [0, vk_end)
//! 72   u64 counts: h, l, a, b_g1, b_g2
//! 4096 h | l | a | b_g1 | b_g2   (blst affine points, Montgomery form)
//! ```

use std::fs::{self, File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use blstrs::{G1Affine, G2Affine};
use memmap2::{Mmap, MmapMut};
use sha2::{Digest, Sha256};

use crate::decode::decode_section;
use crate::layout::Layout;
use crate::point::cast_points_mut;
use crate::SrsError;

const MAGIC: &[u8; 8] = b"CUZKSRS1";
const VERSION: u32 = 1;
pub const HEADER_BYTES: u64 = 4096;
const FLAG_SUBGROUP: u32 = 1;

/// What binds a cache to its source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub source_len: u64,
    pub mtime_secs: i64,
    pub mtime_nanos: u32,
    pub vk_hash: [u8; 32],
    pub counts: [u64; 5],
    pub subgroup_checked: bool,
}

impl Binding {
    pub fn of_source(
        path: &Path,
        file: &File,
        bytes: &[u8],
        layout: &Layout,
        subgroup: bool,
    ) -> Result<Binding, SrsError> {
        let meta = file.metadata().map_err(|e| SrsError::io(path, e))?;
        let mtime = meta.modified().map_err(|e| SrsError::io(path, e))?;
        let (mtime_secs, mtime_nanos) = match mtime.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
            Err(e) => (
                -(e.duration().as_secs() as i64),
                e.duration().subsec_nanos(),
            ),
        };
        let vk_hash: [u8; 32] = Sha256::digest(&bytes[..layout.vk_end() as usize]).into();
        let counts = layout.proving_sections().map(|s| s.count);
        Ok(Binding {
            source_len: layout.file_len,
            mtime_secs,
            mtime_nanos,
            vk_hash,
            counts,
            subgroup_checked: subgroup,
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_BYTES as usize];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let flags = if self.subgroup_checked {
            FLAG_SUBGROUP
        } else {
            0
        };
        h[12..16].copy_from_slice(&flags.to_le_bytes());
        h[16..24].copy_from_slice(&self.source_len.to_le_bytes());
        h[24..32].copy_from_slice(&self.mtime_secs.to_le_bytes());
        h[32..36].copy_from_slice(&self.mtime_nanos.to_le_bytes());
        h[40..72].copy_from_slice(&self.vk_hash);
        for (i, c) in self.counts.iter().enumerate() {
            h[72 + 8 * i..80 + 8 * i].copy_from_slice(&c.to_le_bytes());
        }
        h
    }

    fn decode(cache: &Path, h: &[u8]) -> Result<Binding, SrsError> {
        let corrupt = |offset: u64, what: String| SrsError::CacheCorrupt {
            cache: cache.into(),
            offset,
            what,
        };
        if h.len() < HEADER_BYTES as usize {
            return Err(corrupt(
                0,
                format!(
                    "{} bytes, shorter than the {HEADER_BYTES}-byte header",
                    h.len()
                ),
            ));
        }
        if &h[0..8] != MAGIC {
            return Err(corrupt(0, "bad magic; not a cuzk decode cache".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap_or_default());
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap_or_default());
        let version = u32_at(8);
        if version != VERSION {
            return Err(corrupt(
                8,
                format!("version {version}, this build reads {VERSION}"),
            ));
        }
        let mut vk_hash = [0u8; 32];
        vk_hash.copy_from_slice(&h[40..72]);
        Ok(Binding {
            source_len: u64_at(16),
            mtime_secs: u64_at(24) as i64,
            mtime_nanos: u32_at(32),
            vk_hash,
            counts: [u64_at(72), u64_at(80), u64_at(88), u64_at(96), u64_at(104)],
            subgroup_checked: u32_at(12) & FLAG_SUBGROUP != 0,
        })
    }

    /// Byte ranges of the five sections inside the cache file.
    pub fn ranges(&self) -> [Range<usize>; 5] {
        let sizes = [96u64, 96, 96, 96, 192];
        let mut at = HEADER_BYTES;
        let mut out: [Range<usize>; 5] = Default::default();
        for i in 0..5 {
            let len = self.counts[i] * sizes[i];
            out[i] = at as usize..(at + len) as usize;
            at += len;
        }
        out
    }

    fn total_len(&self) -> u64 {
        self.ranges()[4].end as u64
    }
}

/// Opens a cache and checks it belongs to the source described by `expected`.
///
/// A cache that was made with the subgroup check serves a request without it, not the reverse.
pub fn open(
    cache: &Path,
    source: &Path,
    expected: &Binding,
) -> Result<(Mmap, [Range<usize>; 5]), SrsError> {
    let file = File::open(cache).map_err(|e| SrsError::io(cache, e))?;
    // SAFETY: the cache is only ever replaced by rename, never written in place.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| SrsError::io(cache, e))?;
    let found = Binding::decode(cache, &map)?;
    let mismatch = |field: &'static str, expected: String, found: String| SrsError::CacheMismatch {
        cache: cache.into(),
        source_path: source.into(),
        field,
        expected,
        found,
    };
    if found.vk_hash != expected.vk_hash {
        return Err(mismatch(
            "verifying-key hash",
            hex(&expected.vk_hash),
            hex(&found.vk_hash),
        ));
    }
    if found.source_len != expected.source_len {
        return Err(mismatch(
            "source length",
            expected.source_len.to_string(),
            found.source_len.to_string(),
        ));
    }
    if (found.mtime_secs, found.mtime_nanos) != (expected.mtime_secs, expected.mtime_nanos) {
        return Err(mismatch(
            "source mtime",
            format!("{}.{:09}", expected.mtime_secs, expected.mtime_nanos),
            format!("{}.{:09}", found.mtime_secs, found.mtime_nanos),
        ));
    }
    if found.counts != expected.counts {
        return Err(mismatch(
            "section counts",
            format!("{:?}", expected.counts),
            format!("{:?}", found.counts),
        ));
    }
    if expected.subgroup_checked && !found.subgroup_checked {
        return Err(mismatch(
            "subgroup check",
            "checked".into(),
            "unchecked".into(),
        ));
    }
    if map.len() as u64 != found.total_len() {
        return Err(SrsError::CacheCorrupt {
            cache: cache.into(),
            offset: map.len() as u64,
            what: format!(
                "file is {} bytes, its header describes {}",
                map.len(),
                found.total_len()
            ),
        });
    }
    let ranges = found.ranges();
    Ok((map, ranges))
}

/// Decodes the source's proving sections straight into a new cache file, then renames it into
/// place. On a decode error nothing is left behind.
pub fn build(
    cache: &Path,
    source: &Path,
    bytes: &[u8],
    layout: &Layout,
    binding: &Binding,
) -> Result<(), SrsError> {
    if let Some(dir) = cache.parent() {
        fs::create_dir_all(dir).map_err(|e| SrsError::io(dir, e))?;
    }
    let tmp = tmp_path(cache);
    let result = (|| {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| SrsError::io(&tmp, e))?;
        file.set_len(binding.total_len())
            .map_err(|e| SrsError::io(&tmp, e))?;
        // SAFETY: the temporary file is ours alone until it is renamed.
        let mut map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| SrsError::io(&tmp, e))?;
        map[..HEADER_BYTES as usize].copy_from_slice(&binding.encode());
        let ranges = binding.ranges();
        let sections = layout.proving_sections();
        let subgroup = binding.subgroup_checked;
        for (i, section) in sections.iter().enumerate() {
            let out = &mut map[ranges[i].clone()];
            if i < 4 {
                let pts = cast_points_mut::<G1Affine>(out).ok_or_else(|| misaligned(&tmp))?;
                decode_section(source, bytes, section, pts, subgroup)?;
            } else {
                let pts = cast_points_mut::<G2Affine>(out).ok_or_else(|| misaligned(&tmp))?;
                decode_section(source, bytes, section, pts, subgroup)?;
            }
        }
        map.flush().map_err(|e| SrsError::io(&tmp, e))?;
        fs::rename(&tmp, cache).map_err(|e| SrsError::io(cache, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn misaligned(path: &Path) -> SrsError {
    SrsError::CacheCorrupt {
        cache: path.into(),
        offset: HEADER_BYTES,
        what: "section not aligned for points".into(),
    }
}

fn tmp_path(cache: &Path) -> PathBuf {
    let mut name = cache
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp.{}", std::process::id()));
    cache.with_file_name(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
