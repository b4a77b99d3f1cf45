//! Batch addition over G1 and G2 on the GPU against a plain CPU sum: random bitmaps at several
//! sizes (n = 1, word boundaries, non-powers of two), all and none selected, bits past n set,
//! infinity, duplicate (adjacent, so a running sum meets an equal point) and opposite bases.

mod gpu_util;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cuzk_engine::backend::Backend;
use gpu_util::*;
use group::Group;
use rand::RngCore;

fn bitmap(rng: &mut impl RngCore, n: usize, fill: Option<bool>) -> Vec<u64> {
    (0..n.div_ceil(64) + 1)
        .map(|_| match fill {
            Some(true) => u64::MAX,
            Some(false) => 0,
            None => rng.next_u64(),
        })
        .collect()
}

fn sum_selected<G: Group, A: Copy + Into<G>>(bases: &[A], bits: &[u64]) -> G {
    let mut acc = G::identity();
    for (i, p) in bases.iter().enumerate() {
        if bits[i / 64] >> (i % 64) & 1 == 1 {
            acc += (*p).into();
        }
    }
    acc
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn batch_add_g1_matches_cpu() {
    let b = backend("batch_add_g1_matches_cpu");
    let mut rng = rng("batch_add_g1_matches_cpu");
    for n in [1usize, 2, 63, 64, 65, 1000, 100_003, 1 << 18] {
        let mut bases = g1_points(&mut rng, n);
        plant_point_edges(&mut bases);
        if n > 12 {
            bases[11] = bases[10];
        }
        for fill in [None, Some(true), Some(false)] {
            let bits = bitmap(&mut rng, n, fill);
            let want: G1Projective = sum_selected::<G1Projective, G1Affine>(&bases, &bits);
            assert_eq!(
                b.batch_add_g1(&bases, &bits).unwrap(),
                want,
                "G1 batch add, n = {n}, fill {fill:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn batch_add_g2_matches_cpu() {
    let b = backend("batch_add_g2_matches_cpu");
    let mut rng = rng("batch_add_g2_matches_cpu");
    for n in [1usize, 64, 65, 1000, 20_011] {
        let mut bases = g2_points(&mut rng, n);
        plant_point_edges(&mut bases);
        if n > 12 {
            bases[11] = bases[10];
        }
        for fill in [None, Some(true)] {
            let bits = bitmap(&mut rng, n, fill);
            let want: G2Projective = sum_selected::<G2Projective, G2Affine>(&bases, &bits);
            assert_eq!(
                b.batch_add_g2(&bases, &bits).unwrap(),
                want,
                "G2 batch add, n = {n}, fill {fill:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn batch_add_rejects_short_bitmap() {
    let b = backend("batch_add_rejects_short_bitmap");
    let mut rng = rng("batch_add_rejects_short_bitmap");
    let bases = g1_points(&mut rng, 130);
    assert!(b.batch_add_g1(&bases, &[0u64; 2]).is_err());
}
