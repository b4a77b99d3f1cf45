//! [`Recording`]: a circuit's R1CS recorded once — A, B and C as sparse rows over one column
//! space (inputs, then aux), coefficients by class ([`super::coeff`]), the density bitmaps exactly
//! as synthesis computes them, the counts, a SHA-256 shape hash and the namespace marks.
//!
//! Everything lives in one 8-byte-aligned image of `u64` words, owned or mmap'd from a file, in
//! this order (sizes in words; an entry is `column | code << 32`):
//!
//! ```text
//! row pointers of A [rows + 1] | entries of A [nnz_a] | the same for B | for C
//! table [4 · table] (blst Montgomery limbs) | A aux density | B input density | B aux density
//! marks [8 · marks: inputs, aux, rows as start, end; name offset, length] | mark names [bytes, padded to words]
//! ```
//! The shape hash covers the counts and everything before the marks.

use std::ops::Range;

use blstrs::Scalar;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::coeff;
use super::file::ParamsBinding;
use crate::density::BitVec;
use crate::error::EngineError;

const _: () = assert!(std::mem::size_of::<Scalar>() == 32 && std::mem::align_of::<Scalar>() == 8);

/// The three matrices, in the order the image keeps them.
pub const MATRICES: [&str; 3] = ["A", "B", "C"];

/// How big each part of a recording is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Inputs, `one` included.
    pub inputs: usize,
    pub aux: usize,
    /// The circuit's own constraints (the input rows `x_i · 0 = 0` come after them).
    pub circuit_rows: usize,
    /// Entries of A, B, C.
    pub nnz: [usize; 3],
    /// General coefficients in the side table.
    pub table: usize,
    pub marks: usize,
    /// Bytes of the mark names.
    pub names: usize,
}

impl Counts {
    /// Rows of every matrix: the circuit's constraints and one per input.
    pub fn rows(&self) -> usize {
        self.circuit_rows + self.inputs
    }
    pub fn columns(&self) -> usize {
        self.inputs + self.aux
    }
}

/// Word ranges of the image's sections.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sections {
    pub ptr: [Range<usize>; 3],
    pub ent: [Range<usize>; 3],
    pub table: Range<usize>,
    pub dens: [Range<usize>; 3],
    pub marks: Range<usize>,
    pub names: Range<usize>,
}

impl Sections {
    pub fn of(c: &Counts) -> Sections {
        let mut at = 0;
        let mut take = |n: usize| {
            at += n;
            at - n..at
        };
        let mut s = Sections::default();
        for m in 0..3 {
            s.ptr[m] = take(c.rows() + 1);
            s.ent[m] = take(c.nnz[m]);
        }
        s.table = take(4 * c.table);
        s.dens = [
            take(c.aux.div_ceil(64)),
            take(c.inputs.div_ceil(64)),
            take(c.aux.div_ceil(64)),
        ];
        s.marks = take(8 * c.marks);
        s.names = take(c.names.div_ceil(8));
        s
    }
    pub fn total(&self) -> usize {
        self.names.end
    }
}

/// A namespace of the circuit (at most two levels deep), with the variables and rows it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Namespace names from the root, joined by `/`.
    pub path: String,
    pub inputs: Range<usize>,
    pub aux: Range<usize>,
    pub rows: Range<usize>,
}

pub(crate) enum Store {
    Owned(Vec<u64>),
    Mapped { map: memmap2::Mmap, offset: usize },
}

/// A recorded constraint system (see the module documentation).
pub struct Recording {
    store: Store,
    counts: Counts,
    sections: Sections,
    marks: Vec<Mark>,
    shape_hash: [u8; 32],
    /// The circuit key and the parameters it was recorded for (`None` until bound).
    bound: Option<(String, ParamsBinding)>,
}

fn bad(what: impl Into<String>) -> EngineError {
    EngineError::Recording { what: what.into() }
}

impl Recording {
    /// Wraps an image, checks its structure (every row pointer, column and code in range, every
    /// table value below the modulus) and hashes it; `expect_hash` must then match when given.
    pub(crate) fn from_store(
        store: Store,
        counts: Counts,
        expect_hash: Option<&[u8; 32]>,
    ) -> Result<Recording, EngineError> {
        let sections = Sections::of(&counts);
        let words = words_of(&store);
        if words.len() < sections.total() {
            return Err(bad(format!(
                "image holds {} words, its counts need {}",
                words.len(),
                sections.total()
            )));
        }
        let shape_hash = shape_hash(&counts, &words[..sections.marks.start]);
        if let Some(want) = expect_hash {
            if *want != shape_hash {
                return Err(bad(
                    "shape hash does not match the recorded matrices (damaged)",
                ));
            }
        }
        let mut rec = Recording {
            store,
            counts,
            sections,
            marks: Vec::new(),
            shape_hash,
            bound: None,
        };
        rec.check_structure()?;
        rec.marks = rec.decode_marks()?;
        Ok(rec)
    }

    /// Binds the recording to a circuit key and a parameter set.
    pub fn bind(mut self, key: &str, binding: ParamsBinding) -> Recording {
        self.bound = Some((key.to_string(), binding));
        self
    }
    /// The circuit key and parameters the recording is bound to.
    pub fn bound(&self) -> Option<&(String, ParamsBinding)> {
        self.bound.as_ref()
    }
    /// Refuses a recording made for other parameters than `binding`.
    pub fn check_params(&self, binding: &ParamsBinding) -> Result<(), EngineError> {
        match &self.bound {
            Some((_, b)) if b == binding => Ok(()),
            Some((key, b)) => Err(EngineError::RecordingParams {
                what: format!("recording of {key} was made for parameters {b}, not {binding}"),
            }),
            None => Err(EngineError::RecordingParams {
                what: "recording is bound to no parameters".into(),
            }),
        }
    }

    fn words(&self) -> &[u64] {
        words_of(&self.store)
    }
    pub(crate) fn image(&self) -> &[u64] {
        &self.words()[..self.sections.total()]
    }
    pub fn counts(&self) -> &Counts {
        &self.counts
    }
    pub fn shape_hash(&self) -> &[u8; 32] {
        &self.shape_hash
    }
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }
    /// The mark whose path is `path`.
    pub fn mark(&self, path: &str) -> Option<&Mark> {
        self.marks.iter().find(|m| m.path == path)
    }
    /// Whether the image is mapped from a file (rather than built in this process).
    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mapped { .. })
    }
    /// The image's host bytes, every matrix and the table in one range (what a GPU machine
    /// registers to copy the matrices straight from).
    pub fn host_image(&self) -> &[u8] {
        words_as_bytes(self.image())
    }
    /// Bytes the recording holds (for memory budgets).
    pub fn bytes(&self) -> u64 {
        self.sections.total() as u64 * 8
    }

    /// Device bytes the recording takes resident on a GPU (`gpu::spmv::DeviceRecording`): the
    /// three matrices' row pointers and entries, the coefficient table, the A and B queries'
    /// 32-bit witness columns (every input and the aux dense in A; the inputs and aux dense in
    /// B), and 2 MiB of allocator rounding for each of those nine buffers.
    pub fn device_bytes(&self) -> u64 {
        let s = &self.sections;
        let words: usize = (0..3).map(|m| s.ptr[m].len() + s.ent[m].len()).sum();
        let w = self.words();
        let ones = |i: usize| -> u64 {
            w[s.dens[i].clone()]
                .iter()
                .map(|x| u64::from(x.count_ones()))
                .sum()
        };
        let gathers = self.counts.inputs as u64 + ones(0) + ones(1) + ones(2);
        (words + s.table.len()) as u64 * 8 + 4 * gathers + 9 * (2 << 20)
    }

    /// Row pointers of matrix `m` (0 = A, 1 = B, 2 = C): row `r` is entries `ptr[r]..ptr[r + 1]`.
    pub fn row_ptr(&self, m: usize) -> &[u64] {
        &self.words()[self.sections.ptr[m].clone()]
    }
    /// Entries of matrix `m`: `column | code << 32`.
    pub fn entries(&self, m: usize) -> &[u64] {
        &self.words()[self.sections.ent[m].clone()]
    }
    /// The general coefficients.
    pub fn table(&self) -> &[Scalar] {
        let w = &self.words()[self.sections.table.clone()];
        // SAFETY: Scalar is repr(transparent) over four u64 limbs (size 32, align 8, asserted
        // above); `check_structure` verified every value is below the modulus.
        unsafe { std::slice::from_raw_parts(w.as_ptr() as *const Scalar, w.len() / 4) }
    }
    /// The entries of row `r` of matrix `m`.
    pub fn row(&self, m: usize, r: usize) -> &[u64] {
        let p = self.row_ptr(m);
        &self.entries(m)[p[r] as usize..p[r + 1] as usize]
    }
    /// Densities as synthesis computes them: A over aux, B over inputs, B over aux.
    pub fn densities(&self) -> [BitVec; 3] {
        let lens = [self.counts.aux, self.counts.inputs, self.counts.aux];
        std::array::from_fn(|i| {
            BitVec::from_words(
                self.words()[self.sections.dens[i].clone()].to_vec(),
                lens[i],
            )
        })
    }

    fn check_structure(&self) -> Result<(), EngineError> {
        let c = &self.counts;
        let cols = c.columns() as u64;
        for (m, name) in MATRICES.iter().enumerate() {
            let (p, e) = (self.row_ptr(m), self.entries(m));
            if p.first() != Some(&0)
                || p.last() != Some(&(e.len() as u64))
                || p.windows(2).any(|w| w[0] > w[1])
            {
                return Err(bad(format!(
                    "row pointers of {} are not a monotone cover of its {} entries",
                    name,
                    e.len()
                )));
            }
            let tl = c.table;
            if let Some(i) = e
                .par_iter()
                .position_any(|&x| (x & 0xffff_ffff) >= cols || !coeff::valid((x >> 32) as u32, tl))
            {
                return Err(bad(format!(
                    "entry {i} of {} has a column or code out of range",
                    name
                )));
            }
        }
        if let Some(i) = self.table().iter().position(|s| !canonical(s)) {
            return Err(bad(format!("table value {i} is not below the modulus")));
        }
        for (i, len) in [c.aux, c.inputs, c.aux].into_iter().enumerate() {
            let w = &self.words()[self.sections.dens[i].clone()];
            if len % 64 != 0 && w.last().is_some_and(|&x| x >> (len % 64) != 0) {
                return Err(bad("a density bitmap has bits past its length"));
            }
        }
        Ok(())
    }

    fn decode_marks(&self) -> Result<Vec<Mark>, EngineError> {
        let w = &self.words()[self.sections.marks.clone()];
        let names = words_as_bytes(&self.words()[self.sections.names.clone()]);
        let names = names.get(..self.counts.names).unwrap_or_default();
        w.chunks_exact(8)
            .map(|m| {
                let r = |i: usize| m[i] as usize..m[i + 1] as usize;
                let name = names
                    .get(m[6] as usize..(m[6] + m[7]) as usize)
                    .ok_or_else(|| bad("a mark's name is out of range"))?;
                let path = String::from_utf8(name.to_vec())
                    .map_err(|_| bad("a mark's name is not UTF-8"))?;
                let mark = Mark {
                    path,
                    inputs: r(0),
                    aux: r(2),
                    rows: r(4),
                };
                let fits = |r: &Range<usize>, n: usize| r.start <= r.end && r.end <= n;
                if !(fits(&mark.inputs, self.counts.inputs)
                    && fits(&mark.aux, self.counts.aux)
                    && fits(&mark.rows, self.counts.circuit_rows))
                {
                    return Err(bad(format!("mark {} is out of range", mark.path)));
                }
                Ok(mark)
            })
            .collect()
    }

    /// Where two recordings first differ, in words a person can act on (`None`: same shape).
    pub fn first_difference(&self, other: &Recording) -> Option<String> {
        // The hash covers counts, matrices, table and densities: equal hashes, same shape.
        if self.shape_hash == other.shape_hash {
            return None;
        }
        let (a, b) = (&self.counts, &other.counts);
        for (what, x, y) in [
            ("inputs", a.inputs, b.inputs),
            ("aux variables", a.aux, b.aux),
            ("constraints", a.circuit_rows, b.circuit_rows),
        ] {
            if x != y {
                return Some(format!("{what}: {x} recorded, {y} synthesized"));
            }
        }
        for (m, name) in MATRICES.iter().enumerate() {
            if let Some(r) = (0..a.rows()).find(|&r| !self.row_eq(other, m, r)) {
                return Some(format!("row {r} of {name} differs"));
            }
        }
        if self.densities() != other.densities() {
            return Some("densities differ".into());
        }
        Some("shape hash differs (coefficient table)".into())
    }

    fn row_eq(&self, other: &Recording, m: usize, r: usize) -> bool {
        let (x, y) = (self.row(m, r), other.row(m, r));
        x.len() == y.len()
            && x.iter().zip(y).all(|(&p, &q)| {
                p & 0xffff_ffff == q & 0xffff_ffff
                    && coeff::value((p >> 32) as u32, self.table())
                        == coeff::value((q >> 32) as u32, other.table())
            })
    }

    /// Whether row `r` of matrix `m` holds exactly `terms` (column, non-zero coefficient), in order.
    pub fn row_is(&self, m: usize, r: usize, terms: &[(usize, Scalar)]) -> bool {
        r < self.counts.rows() && {
            let row = self.row(m, r);
            row.len() == terms.len()
                && row.iter().zip(terms).all(|(&e, (col, c))| {
                    (e & 0xffff_ffff) as usize == *col
                        && coeff::value((e >> 32) as u32, self.table()) == Some(*c)
                })
        }
    }
}

fn words_of(store: &Store) -> &[u64] {
    match store {
        Store::Owned(v) => v,
        Store::Mapped { map, offset } => bytes_as_words(map.get(*offset..).unwrap_or_default()),
    }
}

/// Whole words of `bytes` (empty when `bytes` is not 8-byte aligned; a map is page-aligned and
/// the file header a multiple of 8).
pub(crate) fn bytes_as_words(bytes: &[u8]) -> &[u64] {
    if bytes.as_ptr().align_offset(8) != 0 {
        return &[];
    }
    // SAFETY: aligned as checked; u64 has no invalid bit patterns.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const u64, bytes.len() / 8) }
}

pub(crate) fn words_as_bytes(w: &[u64]) -> &[u8] {
    // SAFETY: any u64 is eight valid bytes.
    unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, w.len() * 8) }
}

/// Whether a Montgomery-form value is below the modulus (limbs compared from the top).
fn canonical(s: &Scalar) -> bool {
    const R: [u64; 4] = [
        0xffff_ffff_0000_0001,
        0x53bd_a402_fffe_5bfe,
        0x3339_d808_09a1_d805,
        0x73ed_a753_299d_7d48,
    ];
    // SAFETY: Scalar is four u64 limbs (asserted above).
    let l: [u64; 4] = unsafe { std::mem::transmute(*s) };
    (0..4)
        .rev()
        .find(|&i| l[i] != R[i])
        .is_some_and(|i| l[i] < R[i])
}

/// SHA-256 over the counts and the hashes of 8 MiB pieces of the shape words (pieces hashed in
/// parallel).
fn shape_hash(c: &Counts, words: &[u64]) -> [u8; 32] {
    const PIECE: usize = 1 << 20;
    let pieces: Vec<[u8; 32]> = words
        .par_chunks(PIECE)
        .map(|w| Sha256::digest(words_as_bytes(w)).into())
        .collect();
    let mut h = Sha256::new();
    h.update(b"cuzk-recording-shape-1");
    for n in [
        c.inputs,
        c.aux,
        c.circuit_rows,
        c.nnz[0],
        c.nnz[1],
        c.nnz[2],
        c.table,
    ] {
        h.update((n as u64).to_le_bytes());
    }
    for p in pieces {
        h.update(p);
    }
    h.finalize().into()
}
