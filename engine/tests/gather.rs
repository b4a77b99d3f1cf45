//! The gather plan of the streamed tier (`engine/src/gather.rs`): every nonzero point gathered
//! exactly once, in chunks within their capacity, on several threads; a chunk not of the plan
//! refused; the share rule; the packed bytes; and a query's MSM over its gathered chunks is the
//! whole MSM on G1 and G2 (the CPU backend's `gathered_msm`, which `run_steps` runs in the
//! streamed tier).

use blstrs::Scalar;
use cuzk_engine::density::BitVec;
use cuzk_engine::gather::{gather_bytes, Gather, BLOCK};
use cuzk_engine::prover::Split;
use cuzk_engine::CpuBackend;
use ff::Field;
use rand::{Rng, SeedableRng};

/// A split of `n` points: zeros, ones and others in the given shares.
fn split(n: usize, ones: f64, others: f64, seed: u64) -> Split {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let v: Vec<Scalar> = (0..n)
        .map(|_| {
            let x: f64 = rng.gen();
            if x < ones {
                Scalar::ONE
            } else if x < ones + others {
                Scalar::random(&mut rng)
            } else {
                Scalar::ZERO
            }
        })
        .collect();
    Split::new(v)
}

#[test]
fn every_nonzero_point_is_gathered_once_in_chunks_within_capacity() {
    for (n, ones, others, cap) in [
        (10_000, 0.5, 0.01, 1000),
        // Chunks of several pieces of blocks, dealt to several threads.
        (400_000, 0.5, 0.01, 150_000),
        (4097, 0.0, 0.3, 128),
        (64 * 50, 1.0, 0.0, 640),
        (777, 0.0, 0.0, 256),
        (1, 0.0, 1.0, 1),
    ] {
        let s = split(n, ones, others, n as u64);
        let g = Gather::of(&s, 3);
        assert_eq!(g.ones_total, s.ones.count_ones());
        assert_eq!(g.tail_total, Gather::packed_tail(&s).len());
        let chunks = g.chunks(cap);
        let mut seen = BitVec::zeros(n);
        let mut tail_before = 0;
        let mut last_block = 0;
        for c in &chunks {
            assert!(c.points() <= cap.max(128), "{c:?} over {cap}");
            assert!(c.blocks.start >= last_block, "chunks in order");
            last_block = c.blocks.end;
            assert_eq!(c.tail_before, tail_before);
            tail_before += c.tail;
            let idx = g
                .indices(c, 1 + c.blocks.len() % 4)
                .expect("the plan's chunk");
            assert_eq!(idx.len(), c.points());
            for (k, &i) in idx.iter().enumerate() {
                let i = i as usize;
                assert!(c.blocks.contains(&(i / BLOCK)), "{i} outside {c:?}");
                assert!(!seen.get(i), "{i} gathered twice");
                seen.set(i);
                if k < c.tail {
                    assert!(
                        !bool::from(s.tail[i].is_zero()),
                        "{i}: a zero in the tail part"
                    );
                } else {
                    assert!(s.ones.get(i), "{i}: not a one in the ones part");
                }
            }
            assert!(idx[..c.tail].windows(2).all(|w| w[0] < w[1]));
            assert!(idx[c.tail..].windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(tail_before, g.tail_total);
        for i in 0..n {
            let nonzero = s.ones.get(i) || !bool::from(s.tail[i].is_zero());
            assert_eq!(seen.get(i), nonzero, "point {i} of {n}");
        }
    }
}

#[test]
fn a_chunk_not_of_the_plan_is_refused() {
    let s = split(1000, 0.5, 0.1, 5);
    let g = Gather::of(&s, 3);
    let mut c = g.chunks(10_000)[0].clone();
    c.ones += 1;
    assert!(g.indices(&c, 2).is_none(), "other counts");
    c.ones -= 1;
    c.blocks.end += 1;
    assert!(g.indices(&c, 2).is_none(), "past the plan's blocks");
}

#[test]
fn the_share_decides_whether_gathering_pays() {
    assert!(Gather::of(&split(6400, 0.5, 0.01, 1), 2).pays());
    assert!(!Gather::of(&split(6400, 0.5, 0.4, 2), 2).pays());
    assert!(Gather::of(&Split::default(), 2).pays());
}

#[test]
fn gathered_bytes_are_the_indexed_elements() {
    let src: Vec<u8> = (0..96 * 60_000).map(|i| (i % 253) as u8).collect();
    let idx: Vec<u32> = (0..60_000).rev().step_by(2).collect();
    for threads in [1, 3, 16] {
        let mut out = vec![0u8; idx.len() * 96];
        gather_bytes(&mut out, &src, 96, &idx, threads);
        for (k, &i) in idx.iter().enumerate() {
            let i = i as usize;
            assert_eq!(out[k * 96..(k + 1) * 96], src[i * 96..(i + 1) * 96]);
        }
    }
}

#[test]
fn a_gathered_query_msm_is_the_whole_msm_on_g1_and_g2() {
    use cuzk_engine::backend::gathered_msm;
    use cuzk_engine::{Backend, Cancel};
    use group::prime::PrimeCurveAffine;
    use group::Group;
    let cpu = CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let n = 3000;
    let g1: Vec<blstrs::G1Affine> = (0..n)
        .map(|_| blstrs::G1Projective::random(&mut rng).into())
        .collect();
    let g2: Vec<blstrs::G2Affine> = (0..n / 4)
        .map(|_| blstrs::G2Projective::random(&mut rng).into())
        .collect();
    let cancel = Cancel::default();
    // PoRep-like (half ones, 1 % others), all ones, none, dense, with a point at infinity.
    for (k, (ones, others)) in [(0.5, 0.01), (1.0, 0.0), (0.0, 0.0), (0.2, 0.7)]
        .into_iter()
        .enumerate()
    {
        let mut bases = g1.clone();
        bases[7] = blstrs::G1Affine::identity();
        let s = split(n, ones, others, k as u64);
        let whole = cpu.msm_g1(&bases, &s.tail).unwrap()
            + cpu.batch_add_g1(&bases, s.ones.words()).unwrap();
        for cap in [1, 100, 1000, n] {
            let got = gathered_msm(
                &bases,
                &s,
                &Gather::of(&s, 2),
                cap,
                &cancel,
                |x, y| cpu.msm_g1(x, y),
                |x, y| cpu.batch_add_g1(x, y),
            )
            .unwrap();
            assert_eq!(got, whole, "G1, shares {ones}/{others}, capacity {cap}");
        }
        let s2 = split(n / 4, ones, others, 10 + k as u64);
        let whole2 =
            cpu.msm_g2(&g2, &s2.tail).unwrap() + cpu.batch_add_g2(&g2, s2.ones.words()).unwrap();
        let got2 = gathered_msm(
            &g2,
            &s2,
            &Gather::of(&s2, 2),
            200,
            &cancel,
            |x, y| cpu.msm_g2(x, y),
            |x, y| cpu.batch_add_g2(x, y),
        )
        .unwrap();
        assert_eq!(got2, whole2, "G2, shares {ones}/{others}");
    }
    let s = split(10, 0.5, 0.2, 1);
    let refused = |bases: &[blstrs::G1Affine], g: &Gather| {
        gathered_msm(
            bases,
            &s,
            g,
            64,
            &cancel,
            |x, y| cpu.msm_g1(x, y),
            |x, y| cpu.batch_add_g1(x, y),
        )
        .is_err()
    };
    assert!(
        refused(&g1[..9], &Gather::of(&s, 1)),
        "bases and scalars of different lengths are refused"
    );
    assert!(
        refused(&g1[..10], &Gather::of(&split(11, 0.5, 0.2, 1), 1)),
        "a plan of another split's length is refused"
    );
}

/// What packs a streamed query's tail scalars for their upload (`gpu/witness_upload.rs`): the
/// plan's bitmap, each word's rank and the nonzero values in order unpack to the tail (the
/// device kernel's host model, `PackedWitness`), and a range's nonzero count matches the tail's.
#[test]
fn a_plan_packs_its_tail_and_counts_any_range_of_it() {
    use cuzk_engine::packed_witness::PackedWitness;
    for (n, ones, others) in [
        (10_000, 0.5, 0.01),
        (4097, 0.0, 0.3),
        (64 * 50, 1.0, 0.0),
        (777, 0.0, 0.0),
        (1, 0.0, 1.0),
        (0, 0.5, 0.5),
    ] {
        let s = split(n, ones, others, 7 + n as u64);
        let g = Gather::of(&s, 3);
        let packed = PackedWitness {
            len: n,
            ones: vec![0; n.div_ceil(64)],
            others: g.nonzero_words().to_vec(),
            ranks: g.tail_ranks(),
            values: g.tail_values(&s),
        };
        assert_eq!(packed.values, Gather::packed_tail(&s));
        assert_eq!(packed.unpack(), s.tail, "{n} points");
        let nonzero = |lo: usize, hi: usize| {
            s.tail[lo..hi]
                .iter()
                .filter(|x| !bool::from(x.is_zero()))
                .count()
        };
        for (lo, hi) in [
            (0, n),
            (0, n / 2),
            (64 * (n / 128), n),
            (64, (n / 3).max(64)),
        ] {
            if lo <= hi && hi <= n {
                assert_eq!(g.tail_between(lo, hi), nonzero(lo, hi), "{lo}..{hi} of {n}");
            }
        }
    }
}
