//! A recorded witness packed for its upload: a PoRep witness is almost all zeros and ones
//! (SHA-256's bits), so it crosses PCIe as two bitmaps, where it is one and where it is neither
//! zero nor one, the latter's values in order, and each 64-element word's rank among them: ~80 MB
//! for a 32 GiB partition's 4.2 GB. The device unpacks it (`unpack_witness` in
//! cuda-src/witness.cu; [`PackedWitness::unpack`] is the host's model of that kernel, element
//! for element).
//!
//! Host code only, on scoped threads of its own: `prepare` packs it on the synthesis thread
//! (`ProveOptions::pack_witness`), beside other partitions' synthesis on the rayon pool.

use blstrs::Scalar;
use ff::Field;

use crate::density::{set_bits, word_ranks};
use crate::scalar_words::{is_one, is_zero};

/// Elements per word of either bitmap.
const WORD: usize = 64;

/// Pack only where the packed bytes are at most 1/`MAX_SHARE_DEN` of the plain witness's: the
/// host budget counts that much beside a streamed partition's witness (`tier.rs`'s
/// `host_witness`: synthesis's temporaries, gone by the time the witness is packed).
pub const MAX_SHARE_DEN: usize = 16;

/// `inputs ++ aux`, packed (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedWitness {
    /// Elements in all.
    pub len: usize,
    /// Bit `i % 64` of word `i / 64`: element `i` is one.
    pub ones: Vec<u64>,
    /// Bit `i % 64` of word `i / 64`: element `i` is neither zero nor one.
    pub others: Vec<u64>,
    /// The others before word `k`.
    pub ranks: Vec<u32>,
    /// The others' values, in index order.
    pub values: Vec<Scalar>,
}

impl PackedWitness {
    /// Packs `inputs ++ aux` on up to `threads` threads; `None` where an index would not fit
    /// the ranks' `u32`.
    pub fn of(inputs: &[Scalar], aux: &[Scalar], threads: usize) -> Option<PackedWitness> {
        let len = inputs.len() + aux.len();
        if len > u32::MAX as usize {
            return None;
        }
        let at = |i: usize| -> &Scalar {
            match i.checked_sub(inputs.len()) {
                None => &inputs[i],
                Some(j) => &aux[j],
            }
        };
        let words = len.div_ceil(WORD);
        let mut ones = vec![0u64; words];
        let mut others = vec![0u64; words];
        let step = words.div_ceil(threads.clamp(1, 64)).max(1);
        // The bitmaps, a range of words a thread.
        std::thread::scope(|s| {
            for (k, (o, t)) in ones
                .chunks_mut(step)
                .zip(others.chunks_mut(step))
                .enumerate()
            {
                s.spawn(move || {
                    for (j, (o, t)) in o.iter_mut().zip(t.iter_mut()).enumerate() {
                        let lo = (k * step + j) * WORD;
                        for i in lo..(lo + WORD).min(len) {
                            let v = at(i);
                            if is_one(v) {
                                *o |= 1 << (i - lo);
                            } else if !is_zero(v) {
                                *t |= 1 << (i - lo);
                            }
                        }
                    }
                });
            }
        });
        let ranks = word_ranks(&others);
        let total: usize = others.iter().map(|w| w.count_ones() as usize).sum();
        // The values, each range of words writing its own part.
        let mut values = vec![Scalar::ZERO; total];
        std::thread::scope(|s| {
            let mut rest = values.as_mut_slice();
            for (k, t) in others.chunks(step).enumerate() {
                let count: usize = t.iter().map(|w| w.count_ones() as usize).sum();
                let (mine, tail) = rest.split_at_mut(count);
                rest = tail;
                s.spawn(move || {
                    for (slot, i) in mine.iter_mut().zip(set_bits(t, k * step * WORD)) {
                        *slot = *at(i);
                    }
                });
            }
        });
        Some(PackedWitness {
            len,
            ones,
            others,
            ranks,
            values,
        })
    }

    /// Bytes that cross PCIe.
    pub fn bytes(&self) -> usize {
        8 * (self.ones.len() + self.others.len()) + 4 * self.ranks.len() + 32 * self.values.len()
    }

    /// Whether the packing pays (1/[`MAX_SHARE_DEN`] of the plain witness's bytes or less).
    pub fn pays(&self) -> bool {
        self.bytes() * MAX_SHARE_DEN <= 32 * self.len
    }

    /// Element `i` as the device's kernel finds it.
    pub fn get(&self, i: usize) -> Scalar {
        let (word, bit) = (i / WORD, i % WORD);
        if self.ones[word] >> bit & 1 == 1 {
            return Scalar::ONE;
        }
        let o = self.others[word];
        if o >> bit & 1 == 0 {
            return Scalar::ZERO;
        }
        let below = o & ((1u64 << bit) - 1);
        self.values[self.ranks[word] as usize + below.count_ones() as usize]
    }

    /// The whole witness again (the host's model of `unpack_witness`).
    pub fn unpack(&self) -> Vec<Scalar> {
        (0..self.len).map(|i| self.get(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn witness(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..6) {
                0 | 1 => Scalar::ZERO,
                2 | 3 => Scalar::ONE,
                4 => -Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn a_packed_witness_unpacks_to_itself_at_every_size_and_thread_count() {
        let mut rng = ChaCha20Rng::seed_from_u64(35);
        for (ni, na) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (1, 62),
            (1, 63),
            (3, 125),
            (2, 1000),
            (5, 4099),
        ] {
            let w = witness(ni + na, &mut rng);
            let (inputs, aux) = w.split_at(ni);
            for threads in [1, 2, 3, 8] {
                let p = PackedWitness::of(inputs, aux, threads).unwrap();
                assert_eq!(p.len, w.len());
                assert_eq!(p.ones.len(), w.len().div_ceil(64));
                assert_eq!(p.unpack(), w, "{ni}+{na} on {threads} threads");
                let others = w
                    .iter()
                    .filter(|v| **v != Scalar::ONE && !bool::from(v.is_zero()))
                    .count();
                assert_eq!(p.values.len(), others);
                // The bits past the end are clear.
                if !w.len().is_multiple_of(64) {
                    let last = p.ones.len() - 1;
                    let past = !0u64 << (w.len() % 64);
                    assert_eq!((p.ones[last] | p.others[last]) & past, 0);
                }
            }
        }
    }

    #[test]
    fn packing_pays_for_a_bit_witness_and_not_for_a_dense_one() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let bits: Vec<Scalar> = (0..10_000)
            .map(|i| match i % 200 {
                0 => Scalar::random(&mut rng),
                k if k % 2 == 0 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect();
        let p = PackedWitness::of(&bits[..1], &bits[1..], 4).unwrap();
        assert!(p.pays(), "{} bytes", p.bytes());
        let dense: Vec<Scalar> = (0..1000).map(|_| Scalar::random(&mut rng)).collect();
        assert!(!PackedWitness::of(&[], &dense, 4).unwrap().pays());
    }
}
