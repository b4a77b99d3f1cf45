//! The CPU backend against plain double-and-add and against bellperson's FFT domain, on random
//! inputs and edge cases (empty, n = 1, zero scalars, scalar r − 1, duplicate bases, infinity).

use bellperson::domain::EvaluationDomain;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::density::BitVec;
use cuzk_engine::prover::Split;
use cuzk_engine::{Backend, CpuBackend};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn naive_g1(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    bases.iter().zip(scalars).map(|(b, s)| b * s).sum()
}
fn naive_g2(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    bases.iter().zip(scalars).map(|(b, s)| b * s).sum()
}

fn edge_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    (0..n)
        .map(|i| match i % 7 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => -Scalar::ONE, // r − 1
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

#[test]
fn msm_matches_double_and_add() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let cpu = CpuBackend::new();
    for n in [0usize, 1, 2, 3, 31, 100, 257] {
        let mut g1: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let mut g2: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        if n > 4 {
            g1[3] = g1[4]; // duplicate bases
            g2[3] = g2[4];
            g1[1] = G1Affine::identity(); // the point at infinity
            g2[1] = G2Affine::identity();
        }
        for scalars in [
            edge_scalars(&mut rng, n),
            vec![Scalar::ZERO; n],
            (0..n).map(|_| Scalar::random(&mut rng)).collect(),
        ] {
            assert_eq!(
                cpu.msm_g1(&g1, &scalars).unwrap(),
                naive_g1(&g1, &scalars),
                "G1 n={n}"
            );
            assert_eq!(
                cpu.msm_g2(&g2, &scalars).unwrap(),
                naive_g2(&g2, &scalars),
                "G2 n={n}"
            );
        }
    }
    assert!(
        cpu.msm_g1(&[], &[Scalar::ONE]).is_err(),
        "length mismatch must be an error"
    );
}

#[test]
fn split_then_batch_add_equals_msm() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let cpu = CpuBackend::new();
    for n in [1usize, 64, 65, 500, 1000] {
        let g1: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let g2: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let scalars: Vec<Scalar> = (0..n)
            .map(|_| match rng.gen_range(0..10) {
                0..=3 => Scalar::ZERO,
                4..=7 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
            .collect();
        let split = Split::new(scalars.clone());
        assert_eq!(
            split.ones.count_ones(),
            scalars.iter().filter(|s| **s == Scalar::ONE).count()
        );
        assert!(split.tail.iter().all(|s| *s != Scalar::ONE));
        let g1_sum = cpu.msm_g1(&g1, &split.tail).unwrap()
            + cpu.batch_add_g1(&g1, split.ones.words()).unwrap();
        assert_eq!(g1_sum, naive_g1(&g1, &scalars), "G1 n={n}");
        let g2_sum = cpu.msm_g2(&g2, &split.tail).unwrap()
            + cpu.batch_add_g2(&g2, split.ones.words()).unwrap();
        assert_eq!(g2_sum, naive_g2(&g2, &scalars), "G2 n={n}");
    }
    let none = BitVec::zeros(10);
    assert_eq!(
        cpu.batch_add_g1(&[G1Affine::generator(); 10], none.words())
            .unwrap(),
        G1Projective::identity()
    );
}

#[test]
fn h_matches_bellperson_domain() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let cpu = CpuBackend::new();
    let worker = Worker::new();
    for (len, n) in [
        (1usize, 1usize),
        (2, 2),
        (3, 4),
        (100, 128),
        (1000, 1024),
        (5000, 8192),
    ] {
        let v = |rng: &mut ChaCha8Rng| {
            (0..len)
                .map(|_| Scalar::random(&mut *rng))
                .collect::<Vec<_>>()
        };
        let (a, b, c) = (v(&mut rng), v(&mut rng), v(&mut rng));
        let ours = cpu.compute_h(a.clone(), b.clone(), c.clone()).unwrap();

        let mut da = EvaluationDomain::from_coeffs(a).unwrap();
        let mut db = EvaluationDomain::from_coeffs(b).unwrap();
        let mut dc = EvaluationDomain::from_coeffs(c).unwrap();
        for d in [&mut da, &mut db, &mut dc] {
            d.ifft(&worker, &mut None).unwrap();
            d.coset_fft(&worker, &mut None).unwrap();
        }
        da.mul_assign(&worker, &db);
        da.sub_assign(&worker, &dc);
        da.divide_by_z_on_coset(&worker);
        da.icoset_fft(&worker, &mut None).unwrap();
        let mut theirs = da.into_coeffs();
        theirs.truncate(n - 1);
        assert_eq!(ours.len(), n - 1, "len={len}");
        assert_eq!(ours, theirs, "len={len}");
    }
}
