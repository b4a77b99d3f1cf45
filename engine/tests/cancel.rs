//! Cancellation of the CPU backend's long steps: the chunked MSMs and batch additions and the
//! cancellable H step give exactly the unchunked results, a set token stops each with
//! `Cancelled`, and a token set while a long step runs stops it within a second.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::backend::{batch_add_chunked, msm_chunked};
use cuzk_engine::cpu::CHECK_EVERY;
use cuzk_engine::{Backend, Cancel, CpuBackend, EngineError};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` distinct G1 points cheaply: `p, 2p, 3p, …` from a random `p`.
fn g1_bases(rng: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    let p = G1Projective::random(&mut *rng);
    let mut acc = p;
    let proj: Vec<G1Projective> = (0..n)
        .map(|_| {
            let q = acc;
            acc += p;
            q
        })
        .collect();
    let mut out = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&proj, &mut out);
    out
}

fn g2_bases(rng: &mut ChaCha8Rng, n: usize) -> Vec<G2Affine> {
    (0..n)
        .map(|_| G2Projective::random(&mut *rng).to_affine())
        .collect()
}

fn scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    (0..n)
        .map(|i| match i % 5 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

#[test]
fn chunked_msms_and_batch_additions_equal_the_whole_ones_byte_for_byte() {
    let mut rng = ChaCha8Rng::seed_from_u64(36);
    let cpu = CpuBackend::new();
    let none = Cancel::new();
    for n in [0usize, 1, 63, 64, 65, 1000, 4099] {
        let g1 = g1_bases(&mut rng, n);
        let g2 = g2_bases(&mut rng, n.min(300));
        let s = scalars(&mut rng, n);
        let bits: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.gen()).collect();
        let whole1 = cpu.msm_g1(&g1, &s).unwrap().to_affine().to_compressed();
        let whole2 = cpu
            .msm_g2(&g2, &s[..g2.len()])
            .unwrap()
            .to_affine()
            .to_compressed();
        let ones1 = cpu
            .batch_add_g1(&g1, &bits)
            .unwrap()
            .to_affine()
            .to_compressed();
        let ones2 = cpu
            .batch_add_g2(&g2, &bits)
            .unwrap()
            .to_affine()
            .to_compressed();
        for chunk in [1usize, 7, 64, 100, 1024, usize::MAX] {
            let c1 = msm_chunked(&g1, &s, chunk, &none, |b, s| cpu.msm_g1(b, s)).unwrap();
            assert_eq!(
                c1.to_affine().to_compressed(),
                whole1,
                "G1 n={n} chunk={chunk}"
            );
            let c2 =
                msm_chunked(&g2, &s[..g2.len()], chunk, &none, |b, s| cpu.msm_g2(b, s)).unwrap();
            assert_eq!(
                c2.to_affine().to_compressed(),
                whole2,
                "G2 n={n} chunk={chunk}"
            );
            let a1 =
                batch_add_chunked(&g1, &bits, chunk, &none, |b, w| cpu.batch_add_g1(b, w)).unwrap();
            assert_eq!(
                a1.to_affine().to_compressed(),
                ones1,
                "G1 ones n={n} chunk={chunk}"
            );
            let a2 =
                batch_add_chunked(&g2, &bits, chunk, &none, |b, w| cpu.batch_add_g2(b, w)).unwrap();
            assert_eq!(
                a2.to_affine().to_compressed(),
                ones2,
                "G2 ones n={n} chunk={chunk}"
            );
        }
    }
}

#[test]
fn the_cancellable_h_step_equals_the_plain_one_and_a_set_token_stops_it() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let cpu = CpuBackend::new();
    // Small and large domains: both of the transform's parallel shapes.
    for log_n in [1u32, 4, 10, 15] {
        let n = 1usize << log_n;
        let v = |rng: &mut ChaCha8Rng| -> Vec<Scalar> {
            (0..n).map(|_| Scalar::random(&mut *rng)).collect()
        };
        let (a, b, c) = (v(&mut rng), v(&mut rng), v(&mut rng));
        let plain = cpu.compute_h(a.clone(), b.clone(), c.clone()).unwrap();
        let cancellable = cpu
            .compute_h_or_cancel(a.clone(), b.clone(), c.clone(), &Cancel::new())
            .unwrap();
        assert!(plain == cancellable, "2^{log_n}: H differs");
        let set = Cancel::new();
        set.cancel();
        assert!(matches!(
            cpu.compute_h_or_cancel(a, b, c, &set),
            Err(EngineError::Cancelled)
        ));
    }
}

#[test]
fn a_set_token_stops_a_chunked_msm_and_batch_addition() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let cpu = CpuBackend::new();
    let g1 = g1_bases(&mut rng, 500);
    let s = scalars(&mut rng, 500);
    let set = Cancel::new();
    set.cancel();
    let r = msm_chunked(&g1, &s, 64, &set, |b, s| cpu.msm_g1(b, s));
    assert!(matches!(r, Err(EngineError::Cancelled)));
    let r = batch_add_chunked(&g1, &[u64::MAX; 8], 64, &set, |b, w| cpu.batch_add_g1(b, w));
    assert!(matches!(r, Err(EngineError::Cancelled)));
}

/// Runs `work` on a thread, sets its token after `after`, and returns how long it took to stop
/// once the token was set (or `None` if it finished first).
fn stop_time(
    after: Duration,
    work: impl FnOnce(Cancel) -> Result<(), EngineError> + Send + 'static,
) -> Option<Duration> {
    let cancel = Cancel::new();
    let c = cancel.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work(c));
    });
    std::thread::sleep(after);
    let set = Instant::now();
    cancel.cancel();
    let r = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the step ended");
    match r {
        Err(EngineError::Cancelled) => Some(set.elapsed()),
        Ok(()) => None,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn a_cancelled_long_msm_and_h_step_stop_within_a_second() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    // Several seconds of Pippenger on two cores: cancelled well before its end.
    let n = 1usize << 20;
    let g1 = g1_bases(&mut rng, n);
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let started = Instant::now();
    let took = stop_time(Duration::from_millis(300), move |c| {
        let cpu = CpuBackend::new();
        msm_chunked(&g1, &s, CHECK_EVERY, &c, |b, s| cpu.msm_g1(b, s)).map(|_| ())
    });
    let took = took.unwrap_or_else(|| {
        panic!(
            "the MSM of 2^20 points ended before its cancel ({:?})",
            started.elapsed()
        )
    });
    assert!(
        took < Duration::from_secs(1),
        "the MSM stopped {took:?} after its cancel"
    );

    let n = 1usize << 21;
    let v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let (a, b, c) = (v.clone(), v.clone(), v);
    let took = stop_time(Duration::from_millis(150), move |cancel| {
        CpuBackend::new()
            .compute_h_or_cancel(a, b, c, &cancel)
            .map(|_| ())
    });
    if let Some(took) = took {
        assert!(
            took < Duration::from_secs(1),
            "H stopped {took:?} after its cancel"
        );
    }
}
