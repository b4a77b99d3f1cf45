//! The streamed tier (`Prepared::stream`, the small-card path) run on the host: the CPU backend
//! takes the same steps with its MSMs in the tier's chunks, and the proofs are byte-identical to
//! the whole path's for the same `r, s` — on the recorded path and the full one, with chunks that
//! do and do not divide the bases.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_engine::circuits::{Bits, ManyInputs, MulChain};
use cuzk_engine::gpu::stream_plan::StreamTier;
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, ProveOptions, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;

fn proofs<C: Circuit<Scalar> + Clone + Send>(srs: &Srs, c: C, opts: ProveOptions) -> Vec<u8> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let r = [Scalar::random(&mut rng), Scalar::random(&mut rng)];
    let s = [Scalar::random(&mut rng), Scalar::random(&mut rng)];
    let cpu = CpuBackend::new();
    let mut p = Prover::new(srs, &cpu);
    p.opts = opts;
    p.prove(vec![c.clone(), c], &r, &s).unwrap().to_bytes()
}

fn srs<C: Circuit<Scalar> + Clone>(c: &C) -> Srs {
    Srs::from_parameters(&generate(c.clone(), 5).unwrap())
}

fn streamed(chunk: u64, recorded: bool) -> ProveOptions {
    let mut o = ProveOptions {
        stream: Some(StreamTier {
            chunk,
            chunk_g2: (chunk / 2).max(64),
            resident_bases: false,
            device_products: false,
            resident_recording: false,
            pinned_bases: false,
        }),
        ..ProveOptions::default()
    };
    o.recorded.enabled = recorded;
    o
}

#[test]
fn streamed_tier_proofs_on_the_host_equal_the_whole_paths() {
    for recorded in [true, false] {
        let mut whole = ProveOptions::default();
        whole.recorded.enabled = recorded;
        let mc = MulChain::random(2000, 3, 1);
        let bits = Bits::random(12, 4);
        let inputs = ManyInputs::random(30, 2);
        let (mc_srs, bits_srs, in_srs) = (srs(&mc), srs(&bits), srs(&inputs));
        for chunk in [64, 640, 1 << 20] {
            assert_eq!(
                proofs(&mc_srs, mc.clone(), streamed(chunk, recorded)),
                proofs(&mc_srs, mc.clone(), whole.clone()),
                "mulchain, chunk {chunk}, recorded {recorded}"
            );
            assert_eq!(
                proofs(&bits_srs, bits.clone(), streamed(chunk, recorded)),
                proofs(&bits_srs, bits.clone(), whole.clone()),
                "bits (batch additions), chunk {chunk}, recorded {recorded}"
            );
        }
        assert_eq!(
            proofs(&in_srs, inputs.clone(), streamed(64, recorded)),
            proofs(&in_srs, inputs, whole),
            "many inputs, recorded {recorded}"
        );
    }
}

/// A split of `n` scalars: ones, other nonzero scalars and zeros in the given shares.
fn split(n: usize, ones: f64, others: f64, seed: u64) -> cuzk_engine::prover::Split {
    use rand::Rng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let v = (0..n)
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
    cuzk_engine::prover::Split::new(v)
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
            200,
            &cancel,
            |x, y| cpu.msm_g2(x, y),
            |x, y| cpu.batch_add_g2(x, y),
        )
        .unwrap();
        assert_eq!(got2, whole2, "G2, shares {ones}/{others}");
    }
    let s = split(10, 0.5, 0.2, 1);
    assert!(
        gathered_msm(
            &g1[..9],
            &s,
            64,
            &cancel,
            |x, y| cpu.msm_g1(x, y),
            |x, y| cpu.batch_add_g1(x, y)
        )
        .is_err(),
        "bases and scalars of different lengths are refused"
    );
}
