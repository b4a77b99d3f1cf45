//! Host-side parts of the CUDA backend that need no GPU: XYZZ → projective conversion, the MSM
//! window plan, the NTT root of unity, and the device probe's error path.

use blstrs::{Fp, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::gpu::as_bytes;
use cuzk_engine::gpu::msm::{top_bits, window_bits, MsmPlan, MsmStep, MAX_WINDOW_BITS};
use cuzk_engine::gpu::ntt::omega;
use cuzk_engine::gpu::points::Curve as Kind;
use cuzk_engine::gpu::points::{g1_from_xyzz, g2_from_xyzz};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// XYZZ bytes of an affine point scaled by a random z: (x·z², y·z³, z², z³).
fn g1_xyzz(p: &G1Affine, z: Fp) -> Vec<u8> {
    let (z2, z3) = (z.square(), z.square() * z);
    let v = [p.x() * z2, p.y() * z3, z2, z3];
    as_bytes(&v).to_vec()
}

#[test]
fn xyzz_converts_to_the_same_g1_point() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for _ in 0..20 {
        let p = G1Projective::random(&mut rng).to_affine();
        let z = Fp::random(&mut rng);
        assert_eq!(g1_from_xyzz(&g1_xyzz(&p, z)), G1Projective::from(p));
    }
    assert_eq!(g1_from_xyzz(&[0u8; 192]), G1Projective::identity());
}

#[test]
fn xyzz_converts_to_the_same_g2_point() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    for _ in 0..10 {
        let p: G2Affine = G2Projective::random(&mut rng).to_affine();
        let z = blstrs::Fp2::random(&mut rng);
        let (z2, z3) = (z.square(), z.square() * z);
        let v = [p.x() * z2, p.y() * z3, z2, z3];
        assert_eq!(g2_from_xyzz(as_bytes(&v)), G2Projective::from(p));
    }
    assert_eq!(g2_from_xyzz(&[0u8; 384]), G2Projective::identity());
}

/// `MsmPlan::steps_with`, the one launch list of the device and the host emulation: the sort's
/// histograms and scatters over the same window ranges with the offsets between, then the
/// accumulation, the fold rounds, the fix-up, the bucket reduction and pair rounds down to one
/// term a window.
#[test]
fn msm_steps_follow_the_pipeline() {
    for curve in [Kind::G1, Kind::G2] {
        for log in [0u32, 5, 12, 20, 24, 26, 27] {
            for c in [4u32, 9, 16, 20, MAX_WINDOW_BITS] {
                let p = MsmPlan::with_window(1u64 << log, curve, c).with_share(7);
                for (group, two_pass, fold) in [
                    (p.sort_group(), p.two_pass_sort(), true),
                    (2, true, false),
                    (1, false, true),
                ] {
                    let steps = p.steps_with(group, two_pass, fold);
                    let what = format!("{curve:?} 2^{log} c = {c}, group {group}, two-pass {two_pass}, fold {fold}");
                    let hist: Vec<(u32, u32)> = steps
                        .iter()
                        .filter_map(|s| {
                            if let MsmStep::Histogram { w0, w1 } = *s {
                                Some((w0, w1))
                            } else {
                                None
                            }
                        })
                        .collect();
                    let scat: Vec<(u32, u32)> = steps
                        .iter()
                        .filter_map(|s| match *s {
                            MsmStep::Scatter { w0, w1 } if !two_pass => Some((w0, w1)),
                            MsmStep::ScatterTwoPass { w0, w1, group: g }
                                if two_pass && g == group.clamp(1, p.windows) =>
                            {
                                Some((w0, w1))
                            }
                            _ => None,
                        })
                        .collect();
                    assert_eq!(hist, scat, "{what}: scatters over the histograms' windows");
                    assert_eq!(hist.first().map(|r| r.0), Some(0), "{what}");
                    assert_eq!(hist.last().map(|r| r.1), Some(p.windows), "{what}");
                    assert!(
                        hist.windows(2).all(|r| r[0].1 == r[1].0)
                            && hist.iter().all(|&(a, b)| a < b && b - a <= group.max(1)),
                        "{what}"
                    );
                    let k = hist.len();
                    assert_eq!(
                        steps[k],
                        MsmStep::Offsets,
                        "{what}: offsets after every histogram"
                    );
                    assert_eq!(
                        steps[2 * k + 1],
                        MsmStep::Accumulate,
                        "{what}: then the scatters and the accumulation"
                    );
                    let folds = if fold { p.head_rounds() as usize } else { 0 };
                    for (r, s) in steps[2 * k + 2..2 * k + 2 + folds].iter().enumerate() {
                        assert_eq!(*s, MsmStep::FoldHeads { round: r as u32 }, "{what}");
                    }
                    let tail = &steps[2 * k + 2 + folds..];
                    assert_eq!(tail[0], MsmStep::Fixup { folded: fold }, "{what}");
                    assert_eq!(tail[1], MsmStep::BucketReduce, "{what}");
                    let mut m = p.segments;
                    for s in &tail[2..] {
                        assert_eq!(*s, MsmStep::PairRound { m }, "{what}");
                        m = m.div_ceil(2);
                    }
                    assert_eq!(m, 1, "{what}: pair rounds down to one term a window");
                }
            }
        }
    }
}

/// Plans for sparse scalars (`MsmPlan::sparse`): the dense plan when every scalar may be
/// nonzero; never more device memory than the dense plan of the same points (what the VRAM budget
/// reserves); a narrow window for a witness tail (1 % of 2^27 nonzero), lists of `live` places.
#[test]
fn sparse_msm_plans() {
    use cuzk_engine::gpu::msm::sparse_window_bits;
    for curve in [Kind::G1, Kind::G2] {
        for log in [0u32, 4, 10, 16, 20, 24, 27] {
            let n = (1u64 << log) + 3;
            let dense = MsmPlan::new(n, curve);
            let same = MsmPlan::sparse(n, n, curve);
            assert_eq!(
                (same.c, same.per_thread, same.stride()),
                (dense.c, dense.per_thread, n)
            );
            for live in [0, 1, n / 1000, n / 100, n / 10, n / 2, n - 1, n + 5] {
                let p = MsmPlan::sparse(n, live, curve);
                assert_eq!(p.c, sparse_window_bits(n, live, curve));
                assert_eq!(p.stride(), live.clamp(1, n));
                assert!(
                    p.scratch_bytes() <= dense.scratch_bytes(),
                    "{curve:?} n = {n}, live = {live}: {} > dense {}",
                    p.scratch_bytes(),
                    dense.scratch_bytes()
                );
                assert!(p.windows * p.c >= 256);
            }
        }
    }
    let n = 130_169_893u64;
    let tail = MsmPlan::sparse(n, n / 100, Kind::G1);
    assert!(
        tail.c <= 17 && tail.c < MsmPlan::new(n, Kind::G1).c,
        "{tail:?}"
    );
    assert!(tail.scratch_bytes() < MsmPlan::new(n, Kind::G1).scratch_bytes() / 4);
}

#[test]
fn msm_plans_cover_every_scalar_bit() {
    for curve in [Kind::G1, Kind::G2] {
        for log in 0..=30u32 {
            let n = 1u64 << log;
            for n in [n, n + 3] {
                let p = MsmPlan::new(n, curve);
                assert!(
                    (4..=MAX_WINDOW_BITS).contains(&p.c),
                    "c = {} for n = {n}",
                    p.c
                );
                assert_eq!(p.c, window_bits(n, curve));
                assert!(
                    p.windows * p.c >= 256,
                    "windows do not cover 255 bits plus the carry"
                );
                assert_eq!(p.buckets, 1 << (p.c - 1));
                assert_eq!(p.buckets % p.segments, 0);
                assert!(p.per_thread >= 16);
                assert!(
                    top_bits(p.c) >= p.c.min(8),
                    "a {}-bit top window at c = {}",
                    top_bits(p.c),
                    p.c
                );
                // Bucket sums never outgrow the bases (or 64 MiB).
                let buckets = p.windows as u64 * p.buckets as u64 * curve.xyzz_bytes() as u64;
                assert!(
                    buckets <= (n * curve.affine_bytes() as u64).max(64 << 20),
                    "{buckets} bytes of buckets for n = {n}"
                );
                assert!(p.scratch_bytes() >= buckets + 4 * n * p.windows as u64);
                // The sort's window groups: at least one window, counters within 8 MiB unless
                // a single window is larger.
                let g = p.sort_group();
                assert!((1..=p.windows).contains(&g));
                assert!(
                    g == 1 || 4 * g as u64 * p.buckets as u64 <= 8 << 20,
                    "{g} windows of {} buckets",
                    p.buckets
                );
                assert!(
                    g == p.windows || 4 * (g as u64 + 1) * p.buckets as u64 > 8 << 20,
                    "groups could be larger"
                );
                // The two-pass sort exactly where a launch's run tails (32 bytes a bucket) pass
                // 24 MiB, with at most 32 coarse bins a window, and room for its records.
                assert_eq!(
                    p.two_pass_sort(),
                    32 * g as u64 * p.buckets as u64 > 24 << 20,
                    "c = {}",
                    p.c
                );
                assert!(
                    p.buckets >> p.sort_bin_bits() <= 32 && p.buckets >> p.sort_bin_bits() >= 1
                );
                if p.two_pass_sort() {
                    assert!(
                        p.scratch_bytes() >= buckets + 4 * n * p.windows as u64 + 8 * g as u64 * n
                    );
                }
                // The launches cover every window once, in order, g at a time.
                let launches: Vec<(u32, u32)> = p.sort_launches();
                assert_eq!(launches.first().map(|l| l.0), Some(0));
                assert_eq!(launches.last().map(|l| l.1), Some(p.windows));
                assert!(launches.windows(2).all(|l| l[0].1 == l[1].0));
                assert!(launches.iter().all(|&(a, b)| a < b && b - a <= g));
            }
        }
    }
    // Large MSMs take wider windows than 16 bits (fewer windows, so fewer additions), small ones
    // do not (the buckets would cost more than the points).
    assert!(window_bits(1 << 26, Kind::G1) > 16);
    assert!(window_bits(1 << 10, Kind::G1) < 12);
    // The cost model: fewer windows win once the points dominate.
    let w = |c: u32| MsmPlan::with_window(1 << 26, Kind::G1, c).windows;
    assert!(w(window_bits(1 << 26, Kind::G1)) < w(16));
    // Sort groups: every 16-bit window at once, four 2^19-bucket windows at a time.
    assert_eq!(MsmPlan::with_window(1 << 24, Kind::G1, 16).sort_group(), 16);
    assert_eq!(MsmPlan::with_window(1 << 26, Kind::G1, 20).sort_group(), 4);
    // Head-partial tree rounds: ceil(log2(threads per window)), enough for a bucket spanning a
    // whole window's shares; none with one share per window.
    let rounds = |n: u64, per: u32| {
        MsmPlan::with_window(n, Kind::G1, 16)
            .with_share(per)
            .head_rounds()
    };
    assert_eq!(rounds(1 << 24, 1), 24);
    assert_eq!(rounds(10, 3), 2);
    assert_eq!(rounds(9, 3), 2);
    assert_eq!(rounds(600, 600), 0);
    assert_eq!(rounds(601, 600), 1);
}

#[test]
fn omega_is_a_primitive_root_of_the_domain() {
    for log in [1u32, 2, 10, 27] {
        let w = omega(log);
        assert_eq!(w.pow_vartime([1u64 << log]), Scalar::ONE);
        assert_ne!(w.pow_vartime([1u64 << (log - 1)]), Scalar::ONE);
    }
    assert_eq!(omega(Scalar::S), Scalar::ROOT_OF_UNITY);
}

#[test]
fn probe_reports_what_is_missing_instead_of_panicking() {
    // On a machine without a driver this names libcuda; with one it may succeed. Either way it
    // must return, not panic.
    match cuzk_engine::gpu::probe() {
        Ok(()) => eprintln!("probe: a usable GPU and NVRTC are present"),
        Err(why) => {
            eprintln!("probe: {why}");
            assert!(!why.is_empty());
        }
    }
}

#[test]
fn plans_for_a_device_fill_whole_waves_and_stay_within_the_scratch_bound() {
    // Resident-thread counts of real GPUs and odd ones: the accumulation takes whole waves of
    // them (up to the rounding per window), never more than the bound the budget reserves.
    for curve in [Kind::G1, Kind::G2] {
        for log in [8u32, 14, 20, 22, 24, 26] {
            let n = (1u64 << log) + 5;
            let flat = MsmPlan::new(n, curve);
            for resident in [1u64, 128, 33_792, 67_584, 40_000, 1 << 20] {
                let p = flat.filling_waves(resident);
                assert_eq!(
                    (p.c, p.windows, p.buckets),
                    (flat.c, flat.windows, flat.buckets),
                    "only the share changes"
                );
                assert!(p.per_thread >= 16);
                let threads = p.accumulation_threads();
                assert!(
                    threads <= (1u64 << 18) * 5 / 4 + p.windows as u64,
                    "{threads} threads at n = {n}, resident {resident}"
                );
                // Every point of every window has a thread.
                assert!(threads / p.windows as u64 * p.per_thread as u64 >= n);
                let waves = ((1u64 << 18) + resident / 2) / resident;
                if p.per_thread > 16
                    && (1..=4).contains(&waves)
                    && waves * resident <= (1u64 << 18) * 5 / 4
                {
                    // Not clamped: whole waves, less what the integer share rounds away (at most
                    // one thread in `per_thread`, and one per window).
                    let full = (waves * resident) as f64;
                    assert!(
                        threads as f64 <= full
                            && threads as f64
                                >= full * (1.0 - 1.0 / p.per_thread as f64) - p.windows as f64,
                        "{threads} threads for {waves} waves of {resident} (share {})",
                        p.per_thread
                    );
                }
                assert!(
                    flat.scratch_bytes() >= p.scratch_bytes(),
                    "the budget's bound is below a device plan's scratch at n = {n}"
                );
            }
        }
    }
}
