//! A small, structurally valid parameter set made of random points (no circuit needed).

#![allow(dead_code)]

use std::path::Path;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective};
use group::{Curve, Group};
use rand::SeedableRng;
use std::sync::Arc;

pub fn random_params(
    seed: u64,
    n_ic: usize,
    log_n: u32,
    n_l: usize,
    n_a: usize,
    n_b: usize,
) -> Parameters<Bls12> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut g1 = |k: usize| -> Vec<G1Affine> {
        (0..k)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect()
    };
    let vk1 = g1(3);
    let ic = g1(n_ic);
    let h = g1((1 << log_n) - 1);
    let l = g1(n_l);
    let a = g1(n_a);
    let b_g1 = g1(n_b);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed + 1);
    let mut g2 = |k: usize| -> Vec<G2Affine> {
        (0..k)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect()
    };
    let vk2 = g2(3);
    let b_g2 = g2(n_b);
    Parameters {
        vk: VerifyingKey {
            alpha_g1: vk1[0],
            beta_g1: vk1[1],
            beta_g2: vk2[0],
            gamma_g2: vk2[1],
            delta_g1: vk1[2],
            delta_g2: vk2[2],
            ic,
        },
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    }
}

pub fn small(seed: u64) -> Parameters<Bls12> {
    random_params(seed, 3, 4, 20, 12, 9)
}

pub fn write_bellperson(path: &Path, p: &Parameters<Bls12>) {
    let mut f = std::fs::File::create(path).unwrap();
    p.write(&mut f).unwrap();
}

pub fn same(p: &Parameters<Bls12>, s: &cuzk_srs::Srs) -> bool {
    p.vk == *s.vk()
        && p.h[..] == *s.h()
        && p.l[..] == *s.l()
        && p.a[..] == *s.a()
        && p.b_g1[..] == *s.b_g1()
        && p.b_g2[..] == *s.b_g2()
}
