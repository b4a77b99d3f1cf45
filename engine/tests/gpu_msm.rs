//! MSM over G1 and G2 on the GPU against blstrs on the CPU: fresh random inputs at several sizes
//! (n = 1, non-powers of two, a 2^20 run that uses 16-bit windows), zero scalars, 1, r − 1,
//! duplicate and opposite bases, the point at infinity, all-zero and skewed scalars.

mod gpu_util;

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_engine::backend::Backend;
use cuzk_engine::gpu::as_bytes;
use cuzk_engine::gpu::msm::{msm_g1_with_plan, msm_g2_with_plan, MsmPlan, MAX_WINDOW_BITS};
use cuzk_engine::gpu::points::Curve;
use ff::Field;
use gpu_util::*;
use group::Group;

fn check_g1(b: &dyn Backend, n: usize, rng: &mut impl rand::RngCore, edges: bool) {
    let mut bases = g1_points(rng, n);
    let mut s = scalars(rng, n);
    if edges {
        plant_point_edges(&mut bases);
        plant_scalar_edges(&mut s);
    }
    let want = cpu_msm_g1(&bases, &s);
    let got = b.msm_g1(&bases, &s).expect("GPU msm_g1");
    assert_eq!(got, want, "G1 MSM differs at n = {n} (edges: {edges})");
}

fn check_g2(b: &dyn Backend, n: usize, rng: &mut impl rand::RngCore, edges: bool) {
    let mut bases = g2_points(rng, n);
    let mut s = scalars(rng, n);
    if edges {
        plant_point_edges(&mut bases);
        plant_scalar_edges(&mut s);
    }
    let want = cpu_msm_g2(&bases, &s);
    let got = b.msm_g2(&bases, &s).expect("GPU msm_g2");
    assert_eq!(got, want, "G2 MSM differs at n = {n} (edges: {edges})");
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_g1_matches_cpu() {
    let b = backend("msm_g1_matches_cpu");
    let mut rng = rng("msm_g1_matches_cpu");
    for n in [1usize, 2, 3, 8, 31, 100, 1000, 4099, 65_537] {
        check_g1(b, n, &mut rng, false);
        check_g1(b, n, &mut rng, true);
    }
    assert_eq!(b.msm_g1(&[], &[]).unwrap(), G1Projective::identity());
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_g1_large_uses_16_bit_windows() {
    let b = backend("msm_g1_large_uses_16_bit_windows");
    let mut rng = rng("msm_g1_large_uses_16_bit_windows");
    check_g1(b, (1 << 20) + 5, &mut rng, true);
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_g1_degenerate_scalars() {
    let b = backend("msm_g1_degenerate_scalars");
    let mut rng = rng("msm_g1_degenerate_scalars");
    let n = 5000;
    let bases = g1_points(&mut rng, n);
    for s in [
        vec![Scalar::ZERO; n],
        vec![Scalar::ONE; n],
        vec![Scalar::from(2u64); n],
        vec![r_minus_1(); n],
    ] {
        let want = cpu_msm_g1(&bases, &s);
        assert_eq!(
            b.msm_g1(&bases, &s).unwrap(),
            want,
            "G1 MSM with constant scalar {:?}",
            s[0]
        );
    }
    // All bases equal: every bucket sums copies of one point (the doubling case throughout).
    let same = vec![bases[0]; 777];
    let s = scalars(&mut rng, 777);
    assert_eq!(b.msm_g1(&same, &s).unwrap(), cpu_msm_g1(&same, &s));
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_g2_matches_cpu() {
    let b = backend("msm_g2_matches_cpu");
    let mut rng = rng("msm_g2_matches_cpu");
    for n in [1usize, 2, 3, 8, 100, 1001, 16_411] {
        check_g2(b, n, &mut rng, false);
        check_g2(b, n, &mut rng, true);
    }
    let bases = g2_points(&mut rng, 300);
    for s in [vec![Scalar::ZERO; 300], vec![r_minus_1(); 300]] {
        assert_eq!(b.msm_g2(&bases, &s).unwrap(), cpu_msm_g2(&bases, &s));
    }
    assert_eq!(b.msm_g2(&[], &[]).unwrap(), G2Projective::identity());
}

/// Explicit plans: windows from 4 to 24 bits, and shares per thread so small that buckets spill
/// over many threads (the fix-up adds their partial sums), against the CPU.
#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_explicit_plans_match_cpu() {
    let b = backend("msm_explicit_plans_match_cpu");
    let mut rng = rng("msm_explicit_plans_match_cpu");
    let n = 3001;
    let mut bases = g1_points(&mut rng, n);
    plant_point_edges(&mut bases);
    let mut s = scalars(&mut rng, n);
    plant_scalar_edges(&mut s);
    let skewed = vec![s[5]; n]; // one bucket per window, spilling over every thread's share
    b.with_device(|dev| {
        let bb = dev.upload(as_bytes(&bases), "test bases")?;
        for sc in [&s, &skewed] {
            let want = cpu_msm_g1(&bases, sc);
            let sb = dev.upload(as_bytes(sc), "test scalars")?;
            for (c, per) in [
                (4, 1),
                (4, 7),
                (5, 64),
                (9, 3),
                (13, 16),
                (16, 1000),
                (20, 2),
                (MAX_WINDOW_BITS, 5000),
            ] {
                let plan = MsmPlan::with_window(n as u64, Curve::G1, c).with_share(per);
                assert_eq!(
                    msm_g1_with_plan(dev, &bb, &sb, &plan)?,
                    want,
                    "G1 MSM, c = {c}, {per} points per thread"
                );
            }
        }
        Ok(())
    })
    .expect("explicit G1 plans");

    let n = 501;
    let mut bases = g2_points(&mut rng, n);
    plant_point_edges(&mut bases);
    let mut s = scalars(&mut rng, n);
    plant_scalar_edges(&mut s);
    let want = cpu_msm_g2(&bases, &s);
    b.with_device(|dev| {
        let bb = dev.upload(as_bytes(&bases), "test bases")?;
        let sb = dev.upload(as_bytes(&s), "test scalars")?;
        for (c, per) in [(4, 3), (11, 1), (19, 40)] {
            let plan = MsmPlan::with_window(n as u64, Curve::G2, c).with_share(per);
            assert_eq!(
                msm_g2_with_plan(dev, &bb, &sb, &plan)?,
                want,
                "G2 MSM, c = {c}, {per} points per thread"
            );
        }
        Ok(())
    })
    .expect("explicit G2 plans");
}

/// Sparse scalars, as a witness tail is (~1 % nonzero, some of them small), under the plans
/// sized for their nonzero count (`MsmPlan::on_sparse`, and explicit windows with the lists of
/// that many places), G1 and G2; all-zero scalars under a one-place list.
#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_sparse_plans_match_cpu() {
    use rand::Rng;
    let b = backend("msm_sparse_plans_match_cpu");
    let mut rng = rng("msm_sparse_plans_match_cpu");
    let sparse = |rng: &mut rand_chacha::ChaCha20Rng, n: usize| -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..200) {
                0 => Scalar::random(&mut *rng),
                1 => Scalar::from(rng.gen_range(2..1000u64)),
                _ => Scalar::ZERO,
            })
            .collect()
    };
    let nonzero = |s: &[Scalar]| s.iter().filter(|k| !bool::from(k.is_zero())).count() as u64;
    let n = (1 << 20) + 5;
    let mut bases = g1_points(&mut rng, n);
    plant_point_edges(&mut bases);
    let s = sparse(&mut rng, n);
    let live = nonzero(&s);
    assert!(live > 0 && live < n as u64 / 50, "{live} nonzero of {n}");
    let want = cpu_msm_g1(&bases, &s);
    b.with_device(|dev| {
        let bb = dev.upload(as_bytes(&bases), "test bases")?;
        let sb = dev.upload(as_bytes(&s), "test scalars")?;
        let planned = MsmPlan::on_sparse(dev, n as u64, live, Curve::G1);
        assert!(planned.c < MsmPlan::new(n as u64, Curve::G1).c || planned.c <= 16);
        assert_eq!(
            msm_g1_with_plan(dev, &bb, &sb, &planned)?,
            want,
            "G1, {planned:?}"
        );
        for (c, per) in [(8, 3), (16, 16), (20, 1000)] {
            let plan = MsmPlan::with_window(n as u64, Curve::G1, c)
                .with_live(live)
                .with_share(per);
            assert_eq!(
                msm_g1_with_plan(dev, &bb, &sb, &plan)?,
                want,
                "G1, {plan:?}"
            );
        }
        let zeros = dev.upload(as_bytes(&vec![Scalar::ZERO; n]), "test zeros")?;
        let plan = MsmPlan::with_window(n as u64, Curve::G1, 16).with_live(0);
        assert_eq!(
            msm_g1_with_plan(dev, &bb, &zeros, &plan)?,
            G1Projective::identity(),
            "all zero, one-place lists"
        );
        Ok(())
    })
    .expect("sparse G1 plans");

    let n = (1 << 16) + 1;
    let mut bases = g2_points(&mut rng, n);
    plant_point_edges(&mut bases);
    let s = sparse(&mut rng, n);
    let live = nonzero(&s);
    let want = cpu_msm_g2(&bases, &s);
    b.with_device(|dev| {
        let bb = dev.upload(as_bytes(&bases), "test bases")?;
        let sb = dev.upload(as_bytes(&s), "test scalars")?;
        let planned = MsmPlan::on_sparse(dev, n as u64, live, Curve::G2);
        assert_eq!(
            msm_g2_with_plan(dev, &bb, &sb, &planned)?,
            want,
            "G2, {planned:?}"
        );
        Ok(())
    })
    .expect("sparse G2 plans");
}

/// 2^22 + 3 points under the planned window and under 20- and 22-bit windows (the plans that
/// larger MSMs take): the whole wide-window path at size.
#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_g1_wide_windows_at_2p22() {
    let b = backend("msm_g1_wide_windows_at_2p22");
    let mut rng = rng("msm_g1_wide_windows_at_2p22");
    let n = (1 << 22) + 3;
    let mut bases = g1_points(&mut rng, n);
    plant_point_edges(&mut bases);
    let mut s = scalars(&mut rng, n);
    plant_scalar_edges(&mut s);
    let want = cpu_msm_g1(&bases, &s);
    assert_eq!(b.msm_g1(&bases, &s).unwrap(), want, "planned window");
    b.with_device(|dev| {
        let (bb, sb) = (
            dev.upload(as_bytes(&bases), "test bases")?,
            dev.upload(as_bytes(&s), "test scalars")?,
        );
        for c in [20, 22] {
            assert_eq!(
                msm_g1_with_plan(dev, &bb, &sb, &MsmPlan::with_window(n as u64, Curve::G1, c))?,
                want,
                "c = {c}"
            );
        }
        Ok(())
    })
    .expect("wide windows at 2^22");
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn msm_rejects_mismatched_lengths() {
    let b = backend("msm_rejects_mismatched_lengths");
    let mut rng = rng("msm_rejects_mismatched_lengths");
    let bases = g1_points(&mut rng, 4);
    assert!(b.msm_g1(&bases, &scalars(&mut rng, 3)).is_err());
    let _ = G1Projective::generator();
}
