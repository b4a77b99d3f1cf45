//! Shared helpers of the GPU tests: the device (a test that needs it is `#[ignore]`d, see
//! `backend`), fresh random inputs, and point generation.
#![allow(dead_code)]

use std::sync::OnceLock;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::gpu::{probe, GpuBackend};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The GPU backend. Every test that calls this is `#[ignore]`d with the reason "needs a CUDA GPU",
/// so cargo reports it as ignored (never passed) where there is none; run with `--ignored`
/// (`make test-gpu`, `tests/gpu/run-gpu-tests.sh`) on a GPU machine, where a missing or failing
/// GPU is a test failure.
pub fn backend(test: &str) -> &'static GpuBackend {
    static B: OnceLock<Result<GpuBackend, String>> = OnceLock::new();
    let b = B.get_or_init(|| match probe() {
        Err(why) => Err(format!("no usable CUDA GPU: {why}")),
        Ok(()) => {
            GpuBackend::new(0).map_err(|e| format!("a GPU is present but the backend failed: {e}"))
        }
    });
    match b {
        Ok(b) => b,
        Err(why) => panic!("{test} needs a CUDA GPU and was run with --ignored: {why}"),
    }
}

/// A fresh RNG; the seed is printed so a failure can be replayed with CUZK_TEST_SEED.
pub fn rng(test: &str) -> ChaCha20Rng {
    let seed = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().next_u64());
    eprintln!("{test}: seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

pub fn scalars(rng: &mut impl RngCore, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// n distinct G1 points: a random start and a random step, one addition each.
pub fn g1_points(rng: &mut impl RngCore, n: usize) -> Vec<G1Affine> {
    let mut p = G1Projective::random(&mut *rng);
    let step = G1Projective::random(&mut *rng);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(p);
        p += step;
    }
    let mut out = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&v, &mut out);
    out
}

pub fn g2_points(rng: &mut impl RngCore, n: usize) -> Vec<G2Affine> {
    let mut p = G2Projective::random(&mut *rng);
    let step = G2Projective::random(&mut *rng);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(p);
        p += step;
    }
    let mut out = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&v, &mut out);
    out
}

/// r − 1, the largest scalar.
pub fn r_minus_1() -> Scalar {
    -Scalar::ONE
}

/// Points with the edge cases planted: infinity, a duplicate pair, an opposite pair.
pub fn plant_point_edges<A: PrimeCurveAffine + Copy + std::ops::Neg<Output = A>>(bases: &mut [A]) {
    let n = bases.len();
    if n > 0 {
        bases[n / 2] = A::identity();
    }
    if n >= 8 {
        bases[4] = bases[3];
        bases[7] = -bases[6];
    }
}

/// Scalars with the edge cases planted: 0, 1, r − 1, and equal scalars on the planted pairs.
pub fn plant_scalar_edges(s: &mut [Scalar]) {
    let n = s.len();
    if n >= 3 {
        s[0] = Scalar::ZERO;
        s[1] = Scalar::ONE;
        s[2] = r_minus_1();
    }
    if n >= 8 {
        s[4] = s[3];
        s[7] = s[6];
    }
}

/// CPU reference MSM over G1: a plain loop for small n, blst's Pippenger otherwise.
pub fn cpu_msm_g1(bases: &[G1Affine], s: &[Scalar]) -> G1Projective {
    if bases.len() < 64 {
        return bases
            .iter()
            .zip(s)
            .map(|(p, k)| G1Projective::from(*p) * k)
            .sum();
    }
    let proj: Vec<G1Projective> = bases.iter().map(|p| (*p).into()).collect();
    G1Projective::multi_exp(&proj, s)
}

/// CPU reference MSM over G2.
pub fn cpu_msm_g2(bases: &[G2Affine], s: &[Scalar]) -> G2Projective {
    if bases.len() < 64 {
        return bases
            .iter()
            .zip(s)
            .map(|(p, k)| G2Projective::from(*p) * k)
            .sum();
    }
    let proj: Vec<G2Projective> = bases.iter().map(|p| (*p).into()).collect();
    G2Projective::multi_exp(&proj, s)
}
