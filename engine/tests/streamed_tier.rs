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
            pinned_recording: false,
            overlap_slots: 0,
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
