//! Growable bitmaps: the density trackers of synthesis and the "scalar is one" masks of the 0/1 split.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Words per piece of the parallel gather (2^18 bits).
const GATHER_WORDS: usize = 1 << 12;

/// A bitmap, LSB first within 64-bit words (the layout the `Backend` trait's `Bitmap` uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitVec {
    words: Vec<u64>,
    len: usize,
}

impl BitVec {
    pub fn with_capacity(bits: usize) -> Self {
        BitVec {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }
    pub fn zeros(len: usize) -> Self {
        BitVec {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }
    /// A bitmap of `len` bits from its words (bits past `len` are cleared, missing words zero).
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Self {
        words.resize(len.div_ceil(64), 0);
        if !len.is_multiple_of(64) {
            if let Some(w) = words.last_mut() {
                *w &= (1u64 << (len % 64)) - 1;
            }
        }
        BitVec { words, len }
    }
    /// A bitmap of `len` set bits.
    pub fn all_set(len: usize) -> Self {
        BitVec::from_words(vec![u64::MAX; len.div_ceil(64)], len)
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Appends one clear bit.
    #[inline]
    pub fn push_clear(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    /// Indices of the set bits, in order.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        set_bits(&self.words, 0)
    }
    /// A bitmap with bit `i` set where `keep(&v[i])`, built in parallel (64 elements a word).
    pub fn of<T: Sync>(v: &[T], keep: impl Fn(&T) -> bool + Sync) -> BitVec {
        let words = v
            .par_chunks(64)
            .with_min_len(64)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u64, |w, (k, x)| w | (u64::from(keep(x)) << k))
            })
            .collect();
        BitVec {
            words,
            len: v.len(),
        }
    }

    /// Appends `src[i]` for every set bit `i`, in order, to `out`, in parallel: each piece of
    /// the bitmap writes its own range of `out`, found from the pieces' counts. `out` grows by
    /// exactly the count; no temporary is allocated. Every set bit must index into `src`.
    pub fn gather_into<T: Copy + Send + Sync>(&self, src: &[T], out: &mut Vec<T>) {
        let pieces: Vec<&[u64]> = self.words.chunks(GATHER_WORDS).collect();
        let counts: Vec<usize> = pieces
            .par_iter()
            .map(|p| p.iter().map(|w| w.count_ones() as usize).sum())
            .collect();
        let total: usize = counts.iter().sum();
        out.reserve_exact(total);
        let mut spare = &mut out.spare_capacity_mut()[..total];
        let mut targets: Vec<&mut [MaybeUninit<T>]> = Vec::with_capacity(pieces.len());
        for &n in &counts {
            let (head, rest) = spare.split_at_mut(n);
            targets.push(head);
            spare = rest;
        }
        pieces
            .into_par_iter()
            .zip(targets)
            .enumerate()
            .for_each(|(p, (words, target))| {
                for (slot, i) in target
                    .iter_mut()
                    .zip(set_bits(words, p * GATHER_WORDS * 64))
                {
                    slot.write(src[i]);
                }
            });
        // SAFETY: the targets tile `out`'s first `total` spare slots, and each piece wrote one
        // slot per set bit of its words, which is exactly its count: all `total` are initialized.
        unsafe { out.set_len(out.len() + total) };
    }

    /// Appends `other`'s bits; `skip_first` drops its bit 0 (bellperson's `extend` for inputs).
    pub fn extend_from(&mut self, other: &BitVec, skip_first: bool) {
        for i in usize::from(skip_first)..other.len {
            self.push_clear();
            if other.get(i) {
                self.set(self.len - 1);
            }
        }
    }
}

/// Indices of the set bits of `words`, in order, counted from bit index `base`.
pub(crate) fn set_bits(words: &[u64], base: usize) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(move |(w, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                base + w * 64 + b
            })
        })
    })
}

/// Each word's rank: the set bits of `words` before it (a packed vector's index of its first
/// value there; `packed_witness.rs`, `gather.rs`). The counts must fit `u32`.
pub(crate) fn word_ranks(words: &[u64]) -> Vec<u32> {
    let mut total = 0u32;
    words
        .iter()
        .map(|w| {
            let r = total;
            total = total.wrapping_add(w.count_ones());
            r
        })
        .collect()
}

/// The set bits of `words` among bits `lo..hi` (`lo` a multiple of 64; bits past the words
/// count as clear): a chunk's count in a bitmap (`gather.rs`, `query_pack.rs`).
pub(crate) fn count_between(words: &[u64], lo: usize, hi: usize) -> usize {
    let (w0, w1) = (lo / 64, hi.div_ceil(64).min(words.len()));
    let mut count = 0;
    for (k, &w) in words[w0.min(w1)..w1].iter().enumerate() {
        let start = (w0 + k) * 64;
        let mut w = w;
        if hi < start + 64 {
            w &= (1u64 << (hi - start)) - 1;
        }
        count += w.count_ones() as usize;
    }
    count
}

impl FromIterator<bool> for BitVec {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut v = BitVec::with_capacity(iter.size_hint().0);
        for b in iter {
            v.push_clear();
            if b {
                v.set(v.len - 1);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sequential<T: Copy>(bits: &BitVec, src: &[T]) -> Vec<T> {
        bits.ones().map(|i| src[i]).collect()
    }

    #[test]
    fn the_parallel_gather_and_mask_equal_the_sequential_ones() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let piece = GATHER_WORDS * 64;
        // Empty, under a word, across piece boundaries, and density from none to all.
        for len in [
            0,
            1,
            63,
            64,
            65,
            piece - 1,
            piece,
            piece + 1,
            3 * piece + 17,
        ] {
            for density in [0.0, 0.01, 0.5, 1.0] {
                let src: Vec<u64> = (0..len).map(|_| rng.gen()).collect();
                let bits: BitVec = (0..len).map(|_| rng.gen_bool(density)).collect();
                let mut out = vec![1, 2, 3];
                bits.gather_into(&src, &mut out);
                assert_eq!(&out[..3], &[1, 2, 3]);
                assert_eq!(
                    out[3..],
                    sequential(&bits, &src),
                    "len {len} density {density}"
                );
                assert_eq!(
                    out.capacity(),
                    out.len(),
                    "len {len}: not built at its size"
                );

                let mask = BitVec::of(&src, |x| x % 3 == 0);
                let expect: BitVec = src.iter().map(|x| x % 3 == 0).collect();
                assert_eq!(mask, expect, "len {len}");
            }
        }
    }
}
