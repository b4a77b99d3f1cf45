//! The recorded path on `PipelinedGpu` (only the witness uploaded; a, b, c computed on the device
//! with the shape's resident matrices, every row checked there): proofs byte-identical to the
//! CPU backend with recording off, on every example circuit; an unsatisfied witness is refused by
//! the device row check. Ignored where there is no GPU: `make test-gpu` runs it.

mod gpu_util;

use blstrs::Scalar;
use cuzk_engine::circuits::{Example, Square};
use cuzk_engine::gpu::PipelinedGpu;
use cuzk_engine::recorded::{RecordOptions, RecordingCache};
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, EngineError, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;

fn size(name: &str) -> usize {
    match name {
        // log2 of the domain.
        "mulchain" => 12,
        "sha256" => 64,
        "bits" => 16,
        n => Example::default_size(n),
    }
}

fn opts() -> RecordOptions {
    RecordOptions {
        check_every: 0,
        files: false,
        ..RecordOptions::default()
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn recorded_gpu_proofs_equal_full_cpu_proofs() {
    gpu_util::backend("recorded_gpu_proofs_equal_full_cpu_proofs");
    let gpu = PipelinedGpu::new(0).expect("PipelinedGpu on GPU 0");
    let cpu = CpuBackend::new();
    for name in Example::NAMES {
        let make = |seed| Example::new(name, size(name), seed).unwrap();
        let srs = Srs::from_parameters(&generate(make(1), 3).unwrap());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let r: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
        let s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
        let circuits = || vec![make(4), make(5), make(6)];
        let mut full = Prover::new(&srs, &cpu);
        full.opts.recorded.enabled = false;
        let want = full.prove(circuits(), &r, &s).unwrap().to_bytes();
        let cache = RecordingCache::new();
        let mut on = Prover::new(&srs, &gpu);
        on.recordings = &cache;
        on.opts.recorded = opts();
        // Round 0 records (full assignments); rounds 1 and 2 upload only the witness.
        for round in 0..3 {
            let got = on
                .prove(circuits(), &r, &s)
                .unwrap_or_else(|e| panic!("{name} round {round}: {e}"));
            assert_eq!(got.to_bytes(), want, "{name}: round {round}");
        }
        assert!(gpu.recording_bytes() > 0, "{name}: no recording resident");
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn an_unsatisfied_witness_is_refused_by_the_device_row_check() {
    gpu_util::backend("an_unsatisfied_witness_is_refused_by_the_device_row_check");
    let gpu = PipelinedGpu::new(0).expect("PipelinedGpu on GPU 0");
    let x = Scalar::from(3u64);
    let good = Square { x, y: x.square() };
    let srs = Srs::from_parameters(&generate(good.clone(), 3).unwrap());
    let cache = RecordingCache::new();
    let mut p = Prover::new(&srs, &gpu);
    p.recordings = &cache;
    p.opts.recorded = opts();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    p.prove_random(vec![good.clone()], &mut rng).unwrap();
    p.prove_random(vec![good], &mut rng).unwrap();
    let bad = Square {
        x,
        y: x.square() + Scalar::ONE,
    };
    match p.prove_random(vec![bad], &mut rng) {
        Err(EngineError::Unsatisfied {
            circuit: 0, row: 0, ..
        }) => {}
        other => panic!("expected row 0 unsatisfied, got {:?}", other.map(|_| ())),
    }
}
