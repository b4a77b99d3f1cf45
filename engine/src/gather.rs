//! Gathered bases: a query's MSM in the streamed tier reads only the bases whose scalar is not
//! zero. Of a [`Split`]'s points, the tail's nonzero scalars (~1 % of a PoRep witness) go to an
//! MSM and the ones (about half of it: SHA-256's bits) to a batch addition; the zeros add nothing,
//! so their bases need not cross PCIe at all, and neither do the tail's zeros.
//!
//! A query is cut into chunks of at most `capacity` gathered points ([`Gather::chunks`]): whole
//! 64-point blocks, in order. A chunk's gathered points ([`Gather::indices`]) are its nonzero-tail
//! points first, then its ones: its bases are packed the same way, its MSM reads the first part
//! with the packed tail scalars (`packed[tail_before..tail_before + tail]`: the tail's nonzero
//! scalars in index order, [`Gather::packed_tail`]), and its batch addition the second part with
//! every bit set. The sum over the chunks is the query's MSM: the same point.
//!
//! Host code only: the GPU's streamed tier (`gpu/streamed.rs`) fills its copy ring with
//! [`gather_bytes`], and the host backend (`backend::run_steps`) runs the same chunks, so the
//! plan's proofs are checked byte for byte on the CPU.

use std::ops::Range;

use blstrs::Scalar;
use rayon::prelude::*;

use crate::density::set_bits;
use crate::prover::Split;

/// Points per block: a word of the ones bitmap.
pub const BLOCK: usize = 64;

/// Blocks per piece of the parallel index walk.
const PIECE_BLOCKS: usize = 1 << 10;

/// Gather only where at most this share of a query's points is gathered: above it the packed
/// copies on the host cost more than the bytes they save.
pub const MAX_SHARE: f64 = 0.75;

/// A split's gathered points as two bitmaps (LSB first): where its tail is nonzero, and where
/// its ones are (past the split's end clear). Read on their own, without the split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gather {
    nonzero: Vec<u64>,
    ones: Vec<u64>,
    n: usize,
    /// The tail's nonzero scalars, and the ones, over the whole split.
    pub tail_total: usize,
    pub ones_total: usize,
}

/// One chunk of a gathered query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatherChunk {
    /// Its blocks (points `64 * start .. 64 * end`, the last clipped to the split).
    pub blocks: Range<usize>,
    /// Its nonzero tail scalars and its ones.
    pub tail: usize,
    pub ones: usize,
    /// Nonzero tail scalars before its first block: where its MSM's scalars start in the packed
    /// tail.
    pub tail_before: usize,
}

impl GatherChunk {
    /// Points gathered: its bases, packed.
    pub fn points(&self) -> usize {
        self.tail + self.ones
    }
}

fn word(split: &Split, block: usize) -> u64 {
    let w = split.ones.words().get(block).copied().unwrap_or(0);
    let n = split.len();
    let end = (block + 1) * BLOCK;
    if end > n {
        let keep = n.saturating_sub(block * BLOCK);
        if keep == 0 {
            return 0;
        }
        return w & ((1u64 << keep) - 1);
    }
    w
}

impl Gather {
    /// Reads `split` once, on up to `threads` threads of its own (not the rayon pool's, which
    /// synthesis may keep busy while a GPU's copy pump waits for this).
    pub fn of(split: &Split, threads: usize) -> Gather {
        let n = split.len();
        let blocks = n.div_ceil(BLOCK);
        let (mut nonzero, mut ones) = (vec![0u64; blocks], vec![0u64; blocks]);
        let step = blocks.div_ceil(threads.clamp(1, 64)).max(1 << 12);
        let read = |b0: usize, z: &mut [u64], o: &mut [u64]| {
            for (k, (z, o)) in z.iter_mut().zip(o.iter_mut()).enumerate() {
                let b = b0 + k;
                let s = &split.tail[b * BLOCK..((b + 1) * BLOCK).min(n)];
                *z = s.iter().enumerate().fold(0u64, |w, (i, x)| {
                    w | (u64::from(!crate::scalar_words::is_zero(x)) << i)
                });
                *o = word(split, b);
            }
        };
        std::thread::scope(|sc| {
            for (k, (z, o)) in nonzero
                .chunks_mut(step)
                .zip(ones.chunks_mut(step))
                .enumerate()
            {
                sc.spawn(move || read(k * step, z, o));
            }
        });
        let count = |v: &[u64]| v.iter().map(|w| w.count_ones() as usize).sum();
        Gather {
            tail_total: count(&nonzero),
            ones_total: count(&ones),
            nonzero,
            ones,
            n,
        }
    }

    /// The nonzero-tail bitmap (bit `i % 64` of word `i / 64`), the words past the split clear.
    pub fn nonzero_words(&self) -> &[u64] {
        &self.nonzero
    }

    /// The nonzero tail scalars before each word of [`Gather::nonzero_words`].
    pub fn tail_ranks(&self) -> Vec<u32> {
        crate::density::word_ranks(&self.nonzero)
    }

    /// The nonzero tail scalars in index order, read through the bitmap (only their own
    /// memory); `split` must be the plan's own.
    pub fn tail_values(&self, split: &Split) -> Vec<Scalar> {
        let mut out = Vec::with_capacity(self.tail_total);
        out.extend(set_bits(&self.nonzero, 0).filter_map(|i| split.tail.get(i).copied()));
        out
    }

    /// The nonzero tail scalars among points `lo..hi` (`lo` a multiple of 64).
    pub fn tail_between(&self, lo: usize, hi: usize) -> usize {
        crate::density::count_between(&self.nonzero, lo, hi)
    }

    /// Points of the split.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Points gathered over the whole split.
    pub fn points(&self) -> usize {
        self.tail_total + self.ones_total
    }

    /// The share of the split's points that is gathered (0 for an empty split).
    pub fn share(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.points() as f64 / self.n as f64
        }
    }

    /// Whether gathering pays: at most [`MAX_SHARE`] of the points are gathered (and the points
    /// are indexed by `u32`).
    pub fn pays(&self) -> bool {
        self.share() <= MAX_SHARE && u32::try_from(self.n).is_ok()
    }

    /// The chunks of at most `capacity` gathered points (raised to two blocks' worth: a block
    /// may hold 128 where a split has a one and a nonzero tail at one point), whole blocks in
    /// order; chunks that gather nothing are left out.
    pub fn chunks(&self, capacity: usize) -> Vec<GatherChunk> {
        let capacity = capacity.max(2 * BLOCK);
        let mut out = Vec::new();
        let mut cur = GatherChunk {
            blocks: 0..0,
            tail: 0,
            ones: 0,
            tail_before: 0,
        };
        for (b, (&z, &o)) in self.nonzero.iter().zip(&self.ones).enumerate() {
            let (t, o) = (z.count_ones() as usize, o.count_ones() as usize);
            if cur.points() + t + o > capacity {
                let next_before = cur.tail_before + cur.tail;
                out.push(std::mem::replace(
                    &mut cur,
                    GatherChunk {
                        blocks: b..b,
                        tail: 0,
                        ones: 0,
                        tail_before: next_before,
                    },
                ));
            }
            cur.blocks.end = b + 1;
            cur.tail += t;
            cur.ones += o;
        }
        out.push(cur);
        out.retain(|c| c.points() > 0);
        out
    }

    /// The points of `chunk` (one of [`Gather::chunks`]), in the order their bases are packed:
    /// the nonzero-tail points in order, then the ones in order. Each piece of blocks writes its
    /// own range, found from its words' counts, on up to `threads` threads of its own; `None`
    /// for a chunk that is not this plan's.
    pub fn indices(&self, chunk: &GatherChunk, threads: usize) -> Option<Vec<u32>> {
        if chunk.blocks.end > self.nonzero.len() || chunk.blocks.start > chunk.blocks.end {
            return None;
        }
        let pieces: Vec<Range<usize>> = chunk
            .blocks
            .clone()
            .step_by(PIECE_BLOCKS)
            .map(|b0| b0..(b0 + PIECE_BLOCKS).min(chunk.blocks.end))
            .collect();
        let count = |v: &[u64], r: &Range<usize>| -> usize {
            v[r.clone()].iter().map(|w| w.count_ones() as usize).sum()
        };
        let tcounts: Vec<usize> = pieces.iter().map(|r| count(&self.nonzero, r)).collect();
        let ocounts: Vec<usize> = pieces.iter().map(|r| count(&self.ones, r)).collect();
        let tail: usize = tcounts.iter().sum();
        if tail != chunk.tail || ocounts.iter().sum::<usize>() != chunk.ones {
            return None;
        }
        let mut out = vec![0u32; chunk.points()];
        let (tail_part, ones_part) = out.split_at_mut(tail);
        let ts = cut(tail_part, &tcounts)?;
        let os = cut(ones_part, &ocounts)?;
        // One piece of blocks into its two ranges (their lengths are its words' counts).
        let fill = |r: Range<usize>, ts: &mut [u32], os: &mut [u32]| {
            let set = |words: &[u64], slots: &mut [u32]| {
                for (slot, i) in slots.iter_mut().zip(set_bits(words, r.start * BLOCK)) {
                    *slot = i as u32;
                }
            };
            set(&self.nonzero[r.clone()], ts);
            set(&self.ones[r.clone()], os);
        };
        // The pieces dealt to up to `threads` threads of its own, in turn.
        let threads = threads.clamp(1, 64).min(pieces.len()).max(1);
        let mut work: Vec<Vec<Piece>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, ((r, t), o)) in pieces.into_iter().zip(ts).zip(os).enumerate() {
            work[k % threads].push((r, t, o));
        }
        std::thread::scope(|sc| {
            for w in work {
                sc.spawn(move || {
                    for (r, t, o) in w {
                        fill(r, t, o);
                    }
                });
            }
        });
        Some(out)
    }

    /// The tail's nonzero scalars in index order: the MSMs' packed scalars.
    pub fn packed_tail(split: &Split) -> Vec<Scalar> {
        split
            .tail
            .par_iter()
            .with_min_len(1 << 14)
            .filter(|s| !crate::scalar_words::is_zero(s))
            .copied()
            .collect()
    }
}

/// A piece of a chunk's blocks with its two ranges of the indices (nonzero tail, ones).
type Piece<'a> = (Range<usize>, &'a mut [u32], &'a mut [u32]);

/// Threads of its own a host backend's gather takes: every core.
pub fn host_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Host threads of their own for the streamed tier's passes beside synthesis (a gathered
/// chunk's packing, a query's plan, a witness's packing): half the cores, at most 8.
pub fn side_threads() -> usize {
    (host_threads() / 2).clamp(1, 8)
}

/// `rest` cut into consecutive slices of `counts` elements, which must tile it.
fn cut<'a>(mut rest: &'a mut [u32], counts: &[usize]) -> Option<Vec<&'a mut [u32]>> {
    let mut parts = Vec::with_capacity(counts.len());
    for &k in counts {
        if k > rest.len() {
            return None;
        }
        let (head, tail) = rest.split_at_mut(k);
        parts.push(head);
        rest = tail;
    }
    rest.is_empty().then_some(parts)
}

/// Copies element `idx[k]` of `src` (elements of `elem` bytes) to element `k` of `out`, on up
/// to `threads` threads. `out` holds exactly `idx.len()` elements.
pub fn gather_bytes(out: &mut [u8], src: &[u8], elem: usize, idx: &[u32], threads: usize) {
    debug_assert_eq!(out.len(), idx.len() * elem);
    let copy = |out: &mut [u8], idx: &[u32]| {
        for (d, &i) in out.chunks_exact_mut(elem).zip(idx) {
            let i = i as usize;
            d.copy_from_slice(&src[i * elem..(i + 1) * elem]);
        }
    };
    const MIN: usize = 1 << 14;
    let parts = threads.clamp(1, 16).min(idx.len().div_ceil(MIN)).max(1);
    if parts == 1 {
        copy(out, idx);
        return;
    }
    let step = idx.len().div_ceil(parts);
    std::thread::scope(|sc| {
        for (d, i) in out.chunks_mut(step * elem).zip(idx.chunks(step)) {
            sc.spawn(move || copy(d, i));
        }
    });
}

/// `v[idx[k]]` for every `k`: a chunk's gathered points (the host backend's packed bases).
pub fn gather_points<T: Copy + Send + Sync>(v: &[T], idx: &[u32]) -> Vec<T> {
    idx.par_iter()
        .with_min_len(1 << 12)
        .map(|&i| v[i as usize])
        .collect()
}
