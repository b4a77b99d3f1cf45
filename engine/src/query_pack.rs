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

use crate::density::{count_between, word_ranks, BitVec};
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

    /// Appends `other`'s bits.
    fn append(&mut self, other: &Stream) {
        let full = other.len / 64;
        for &w in &other.words[..full] {
            self.push(w, 64);
        }
        if let Some(&w) = other.words.get(full) {
            self.push(w, (other.len % 64) as u32);
        }
    }
}

/// Words of a segment a piece of [`QueryPack::from_witness_on`]'s parallel walk.
pub const PIECE_WORDS: usize = 1 << 14;

/// One piece's part of a query: its ones and tail bits and its tail values.
struct Piece {
    ones: Stream,
    tail: Stream,
    values: Vec<Scalar>,
}

/// Words `words` of segment `s` (checked within the witness and its selection).
fn piece(w: &PackedWitness, s: &Segment, words: std::ops::Range<usize>) -> Piece {
    let (mut ones, mut tail) = (Stream::default(), Stream::default());
    let mut values = Vec::new();
    for k in words {
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
        let mut hit = t & sel;
        while hit != 0 {
            let i = at + hit.trailing_zeros() as usize;
            values.push(w.values[rank(w, i)]);
            hit &= hit - 1;
        }
    }
    Piece { ones, tail, values }
}

/// [`QueryPack::from_witness_on`] in pieces of `piece_words` words.
fn walk(
    w: &PackedWitness,
    segments: &[Segment],
    threads: usize,
    piece_words: usize,
) -> Option<QueryPack> {
    if segments
        .iter()
        .any(|s| s.start + s.len > w.len || s.select.is_some_and(|m| m.len() < s.len))
    {
        return None;
    }
    let pieces: Vec<(&Segment, std::ops::Range<usize>)> = segments
        .iter()
        .flat_map(|s| {
            let words = s.len.div_ceil(64);
            (0..words.div_ceil(piece_words))
                .map(move |p| (s, p * piece_words..((p + 1) * piece_words).min(words)))
        })
        .collect();
    let threads = threads.clamp(1, pieces.len().max(1));
    let mut done: Vec<Option<Piece>> = (0..pieces.len()).map(|_| None).collect();
    std::thread::scope(|sc| {
        for (t, out) in done
            .chunks_mut(pieces.len().div_ceil(threads).max(1))
            .enumerate()
        {
            let first = t * pieces.len().div_ceil(threads).max(1);
            let pieces = &pieces;
            sc.spawn(move || {
                for (k, o) in out.iter_mut().enumerate() {
                    let (s, words) = &pieces[first + k];
                    *o = Some(piece(w, s, words.clone()));
                }
            });
        }
    });
    let (mut ones, mut tail) = (Stream::default(), Stream::default());
    let mut values = Vec::new();
    for p in done.into_iter().collect::<Option<Vec<Piece>>>()? {
        ones.append(&p.ones);
        tail.append(&p.tail);
        values.extend(p.values);
    }
    debug_assert_eq!(ones.len, tail.len);
    Some(QueryPack {
        len: ones.len,
        ones: ones.words,
        tail: tail.words,
        values,
    })
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
        Self::from_witness_on(w, segments, 1)
    }

    /// [`QueryPack::from_witness`] on up to `threads` threads of its own: each takes pieces of
    /// [`PIECE_WORDS`] words in turn, and the pieces' bitmaps are joined in order.
    pub fn from_witness_on(
        w: &PackedWitness,
        segments: &[Segment],
        threads: usize,
    ) -> Option<QueryPack> {
        walk(w, segments, threads, PIECE_WORDS)
    }

    /// The three queries `(l, a, b)` of a witness of `inputs` inputs packed as `w`, by the
    /// recording's densities `[a_aux, b_in, b_aux]` (`splits`'s layout), on up to `threads`
    /// threads of their own.
    pub fn queries(
        w: &PackedWitness,
        inputs: usize,
        [a_aux, b_in, b_aux]: [&BitVec; 3],
        threads: usize,
    ) -> Option<[QueryPack; 3]> {
        let aux = w.len.checked_sub(inputs)?;
        let seg = |start, len, select| Segment { start, len, select };
        // A third of the threads a query.
        let t = threads.div_ceil(3).max(1);
        let (l, a, b) = std::thread::scope(|s| {
            let l = s.spawn(|| Self::from_witness_on(w, &[seg(inputs, aux, None)], t));
            let a = s.spawn(|| {
                Self::from_witness_on(w, &[seg(0, inputs, None), seg(inputs, aux, Some(a_aux))], t)
            });
            let b = Self::from_witness_on(
                w,
                &[seg(0, inputs, Some(b_in)), seg(inputs, aux, Some(b_aux))],
                t,
            );
            (l.join().ok().flatten(), a.join().ok().flatten(), b)
        });
        Some([l?, a?, b?])
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

    /// Whether `packs` stay on the device whole within a plan's bound: their tails together at
    /// most what 1 in `den` of each one's scalars come to (`stream_plan::packed_query_bytes`
    /// reserves the sum, so one query's denser tail, as `b`'s at 32 GiB PoRep, is carried by the
    /// others' sparse ones).
    pub fn within(packs: &[QueryPack], den: u64) -> bool {
        Self::tails_within(
            packs.iter().map(|p| p.values.len()).sum(),
            packs.iter().map(|p| p.len),
            den,
        )
    }

    /// The bound of [`QueryPack::within`] for `tails` tail values in all over queries of `lens`
    /// scalars: at most 1 in `den` of each one's scalars (rounded up), summed.
    pub fn tails_within(tails: usize, lens: impl IntoIterator<Item = usize>, den: u64) -> bool {
        let bound: u64 = lens.into_iter().map(|n| (n as u64).div_ceil(den)).sum();
        tails as u64 <= bound
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
            let ours = QueryPack::queries(&packed, inputs, [&dens[0], &dens[1], &dens[2]], 3)
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
        assert!(!QueryPack::within(std::slice::from_ref(&all), 32));
        assert!(QueryPack::within(std::slice::from_ref(&all), 1));
        // A dense query within the bound beside sparse ones: 10 tail values against
        // a bound of 1 + 10 + 1 (1 in 32 over 10, 320 and 32 scalars).
        let sparse = |len| QueryPack {
            len,
            ones: vec![0; len.div_ceil(64)],
            tail: vec![0; len.div_ceil(64)],
            values: vec![],
        };
        assert!(QueryPack::within(
            &[all.clone(), sparse(320), sparse(32)],
            32
        ));
        assert!(
            !QueryPack::within(&[all, sparse(224), sparse(32)], 32),
            "10 of 1 + 7 + 1"
        );
    }

    #[test]
    fn a_query_walked_in_pieces_on_threads_is_the_same_pack() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(36);
        let w = witness(3 + 700, &mut rng);
        let packed = PackedWitness::of(&w[..3], &w[3..], 2).unwrap();
        let sel = bits(700, 0.3, &mut rng);
        let segs = [
            Segment {
                start: 0,
                len: 3,
                select: None,
            },
            Segment {
                start: 3,
                len: 700,
                select: Some(&sel),
            },
        ];
        let whole = walk(&packed, &segs, 1, 1 << 20).unwrap();
        for (threads, piece) in [(1, 1), (2, 1), (3, 2), (4, 3), (16, 5)] {
            assert_eq!(
                walk(&packed, &segs, threads, piece).unwrap(),
                whole,
                "{threads} threads, pieces of {piece} words"
            );
        }
    }

    #[test]
    fn pext_keeps_the_masked_bits_in_order() {
        assert_eq!(pext(0b1011_0110, 0b1111_0000), 0b1011);
        assert_eq!(pext(u64::MAX, 0), 0);
        assert_eq!(pext(0x8000_0000_0000_0001, u64::MAX), 0x8000_0000_0000_0001);
        assert_eq!(pext(0b1010, 0b1010), 0b11);
    }
}
