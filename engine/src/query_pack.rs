//! A query's MSM scalars packed (`l = aux`, `a = inputs ++ aux[a]`, `b = inputs[b] ++ aux[b]`):
//! a bitmap of its ones, a bitmap of its tail (neither zero nor one), and the tail's values in
//! order. The streamed tier's overlapped step (`gpu/streamed_overlap.rs`) keeps it on the device
//! and unpacks a chunk at a time.
//!
//! Built from the packed witness (`packed_witness.rs`, made at synthesis) by compacting its
//! bitmaps through the queries' densities, a word at a time ([`QueryPack::from_witness`]): no
//! pass over the 4.2 GB witness of a 32 GiB partition and no dense split. Or from a dense split
//! and its gather plan ([`QueryPack::of_split`]), where the witness was not packed. Both give the
//! same pack (`tests`).

use blstrs::Scalar;

use crate::density::{count_between, set_bits, word_ranks, BitVec};
use crate::gather::Gather;
use crate::packed_witness::PackedWitness;
use crate::prover::Split;

/// A query's scalars packed (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryPack {
    /// Scalars in all.
    pub len: usize,
    /// Bit `i % 64` of word `i / 64`: scalar `i` is one (words past `len` clear).
    pub ones: Vec<u64>,
    /// Bit `i % 64` of word `i / 64`: scalar `i` is neither zero nor one.
    pub tail: Vec<u64>,
    /// The tail's values, in index order.
    pub values: Vec<Scalar>,
}

/// A range of the witness, `start..start + len`, of which the elements whose bit is set in
/// `select` (indexed from `start`; `None`: all) belong to a query, in order.
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    pub start: usize,
    pub len: usize,
    pub select: Option<&'a BitVec>,
}

/// A growing bitmap, appended to a word at a time.
#[derive(Default)]
struct Stream {
    words: Vec<u64>,
    len: usize,
}

impl Stream {
    /// Appends the low `count` bits of `bits`.
    fn push(&mut self, bits: u64, count: u32) {
        if count == 0 {
            return;
        }
        let bits = if count == 64 {
            bits
        } else {
            bits & ((1u64 << count) - 1)
        };
        let off = (self.len % 64) as u32;
        if off == 0 {
            self.words.push(bits);
        } else {
            if let Some(w) = self.words.last_mut() {
                *w |= bits << off;
            }
            if off + count > 64 {
                self.words.push(bits >> (64 - off));
            }
        }
        self.len += count as usize;
    }
}

/// The 64 bits of `words` from bit `at` on (zeros past the end).
fn bits_at(words: &[u64], at: usize) -> u64 {
    let (w, off) = (at / 64, at % 64);
    let lo = words.get(w).copied().unwrap_or(0);
    if off == 0 {
        return lo;
    }
    let hi = words.get(w + 1).copied().unwrap_or(0);
    (lo >> off) | (hi << (64 - off))
}

/// The bits of `x` where `mask` is set, packed low (BMI2's `pext`).
fn pext(x: u64, mask: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("bmi2") {
            // SAFETY: the CPU has BMI2, checked just above.
            return unsafe { pext_bmi2(x, mask) };
        }
    }
    let (mut out, mut k, mut m) = (0u64, 0u32, mask);
    while m != 0 {
        let b = m.trailing_zeros();
        out |= ((x >> b) & 1) << k;
        k += 1;
        m &= m - 1;
    }
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn pext_bmi2(x: u64, mask: u64) -> u64 {
    core::arch::x86_64::_pext_u64(x, mask)
}

/// The witness's values rank: the others before element `i`.
fn rank(w: &PackedWitness, i: usize) -> usize {
    let (k, b) = (i / 64, i % 64);
    w.ranks[k] as usize + (w.others[k] & ((1u64 << b) - 1)).count_ones() as usize
}

impl QueryPack {
    /// The query made of `segments` of the packed witness `w`, in order; `None` where a segment
    /// lies outside the witness or its selection is shorter than it.
    pub fn from_witness(w: &PackedWitness, segments: &[Segment]) -> Option<QueryPack> {
        let (mut ones, mut tail) = (Stream::default(), Stream::default());
        let mut values = Vec::new();
        for s in segments {
            if s.start + s.len > w.len || s.select.is_some_and(|m| m.len() < s.len) {
                return None;
            }
            for k in 0..s.len.div_ceil(64) {
                let at = s.start + 64 * k;
                let left = (s.len - 64 * k).min(64) as u32;
                let range = if left == 64 {
                    u64::MAX
                } else {
                    (1u64 << left) - 1
                };
                let sel = s.select.map_or(u64::MAX, |m| m.words()[k]) & range;
                let (o, t) = (bits_at(&w.ones, at), bits_at(&w.others, at));
                let count = sel.count_ones();
                ones.push(pext(o, sel), count);
                tail.push(pext(t, sel), count);
                values.extend(set_bits(&[t & sel], at).map(|i| w.values[rank(w, i)]));
            }
        }
        debug_assert_eq!(ones.len, tail.len);
        Some(QueryPack {
            len: ones.len,
            ones: ones.words,
            tail: tail.words,
            values,
        })
    }

    /// The three queries `(l, a, b)` of a witness of `inputs` inputs packed as `w`, by the
    /// recording's densities `[a_aux, b_in, b_aux]` (`splits`'s layout).
    pub fn queries(
        w: &PackedWitness,
        inputs: usize,
        [a_aux, b_in, b_aux]: [&BitVec; 3],
    ) -> Option<[QueryPack; 3]> {
        let aux = w.len.checked_sub(inputs)?;
        let seg = |start, len, select| Segment { start, len, select };
        let l = Self::from_witness(w, &[seg(inputs, aux, None)])?;
        let a = Self::from_witness(w, &[seg(0, inputs, None), seg(inputs, aux, Some(a_aux))])?;
        let b = Self::from_witness(
            w,
            &[seg(0, inputs, Some(b_in)), seg(inputs, aux, Some(b_aux))],
        )?;
        Some([l, a, b])
    }

    /// The same pack from a dense split and its gather plan (`g` must be `split`'s).
    pub fn of_split(split: &Split, g: &Gather) -> QueryPack {
        let len = split.len();
        QueryPack {
            len,
            ones: BitVec::from_words(split.ones.words().to_vec(), len)
                .words()
                .to_vec(),
            tail: g.nonzero_words().to_vec(),
            values: g.tail_values(split),
        }
    }

    /// The tail's values before each word of [`QueryPack::tail`].
    pub fn ranks(&self) -> Vec<u32> {
        word_ranks(&self.tail)
    }

    /// Whether it stays on the device whole: at most 1 in `den` of its scalars in the tail.
    pub fn within(&self, den: u64) -> bool {
        (self.values.len() as u64) <= (self.len as u64).div_ceil(den)
    }

    /// The tail's scalars among `lo..hi` (`lo` a multiple of 64).
    pub fn tail_between(&self, lo: usize, hi: usize) -> usize {
        count_between(&self.tail, lo, hi)
    }

    /// The ones among `lo..hi` (`lo` a multiple of 64).
    pub fn ones_between(&self, lo: usize, hi: usize) -> usize {
        count_between(&self.ones, lo, hi)
    }

    pub fn ones_total(&self) -> usize {
        self.ones.iter().map(|w| w.count_ones() as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prover::splits;
    use rand::{Rng, SeedableRng};

    fn witness(n: usize, rng: &mut impl Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..100) {
                0..=44 => Scalar::from(0u64),
                45..=95 => Scalar::from(1u64),
                _ => Scalar::from(rng.gen::<u64>() | 2),
            })
            .collect()
    }

    fn bits(n: usize, p: f64, rng: &mut impl Rng) -> BitVec {
        let mut b = BitVec::zeros(n);
        for i in 0..n {
            if rng.gen_bool(p) {
                b.set(i);
            }
        }
        b
    }

    #[test]
    fn packs_from_the_packed_witness_equal_those_of_the_dense_splits() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(35);
        for (inputs, aux, p) in [
            (1usize, 0usize, 0.5),
            (1, 1, 1.0),
            (3, 200, 0.5),
            (1, 64, 1.0),
            (65, 130, 0.0),
            (17, 4096 + 13, 0.3),
            (64, 640, 0.9),
            (200, 1000, 0.5),
        ] {
            let w = witness(inputs + aux, &mut rng);
            let (ins, aux_v) = w.split_at(inputs);
            let dens = [
                bits(aux, p, &mut rng),
                bits(inputs, p, &mut rng),
                bits(aux, 1.0 - p, &mut rng),
            ];
            let packed = PackedWitness::of(ins, aux_v, 3).expect("packs");
            let ours = QueryPack::queries(&packed, inputs, [&dens[0], &dens[1], &dens[2]])
                .expect("segments within the witness");
            let (l, a, b) = splits(ins, aux_v.to_vec(), [&dens[0], &dens[1], &dens[2]]);
            for (name, ours, split) in [
                ("l", &ours[0], &l),
                ("a", &ours[1], &a),
                ("b", &ours[2], &b),
            ] {
                let theirs = QueryPack::of_split(split, &Gather::of(split, 2));
                assert_eq!(
                    ours, &theirs,
                    "{name}: {inputs} inputs, {aux} aux, density {p}"
                );
                assert_eq!(ours.ranks(), Gather::of(split, 2).tail_ranks());
                for (lo, hi) in [(0, ours.len), (64, ours.len), (0, ours.len / 2)] {
                    if lo <= hi {
                        let dense = split.tail[lo..hi]
                            .iter()
                            .filter(|x| !bool::from(ff::Field::is_zero(*x)))
                            .count();
                        assert_eq!(ours.tail_between(lo, hi), dense, "{name} tail {lo}..{hi}");
                        let ones = (lo..hi).filter(|&i| split.ones.get(i)).count();
                        assert_eq!(ours.ones_between(lo, hi), ones, "{name} ones {lo}..{hi}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_segment_outside_the_witness_or_a_short_selection_is_refused() {
        let w = PackedWitness::of(&[Scalar::from(1u64)], &[Scalar::from(5u64); 10], 1).unwrap();
        let short = BitVec::zeros(5);
        assert!(QueryPack::from_witness(
            &w,
            &[Segment {
                start: 1,
                len: 11,
                select: None
            }]
        )
        .is_none());
        assert!(QueryPack::from_witness(
            &w,
            &[Segment {
                start: 1,
                len: 10,
                select: Some(&short)
            }]
        )
        .is_none());
        let all = QueryPack::from_witness(
            &w,
            &[Segment {
                start: 1,
                len: 10,
                select: None,
            }],
        )
        .unwrap();
        assert_eq!((all.len, all.values.len()), (10, 10));
        assert!(!all.within(32) && all.within(1));
    }

    #[test]
    fn pext_keeps_the_masked_bits_in_order() {
        assert_eq!(pext(0b1011_0110, 0b1111_0000), 0b1011);
        assert_eq!(pext(u64::MAX, 0), 0);
        assert_eq!(pext(0x8000_0000_0000_0001, u64::MAX), 0x8000_0000_0000_0001);
        assert_eq!(pext(0b1010, 0b1010), 0b11);
    }
}
