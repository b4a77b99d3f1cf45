//! Whole proofs on the GPU — the plain `GpuBackend` (heavy steps one by one) and `PipelinedGpu`
//! (staged on a copy stream, resident bases) — byte-identical to the CPU backend for the same
//! `r, s`, on circuits with random witnesses, with many ones (batch addition), and with no aux.
//! Ignored (`#[ignore]`, reason given) where there is no GPU: `make test-gpu` runs it.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_engine::circuits::{Bits, COnlyAux, ManyInputs, MulChain, NoAux, Sha256Preimage};
use cuzk_engine::gpu::{probe, PipelinedGpu};
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, Pipeline, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;

mod gpu_util;

fn same<C: Circuit<Scalar> + Clone + Send>(
    name: &str,
    gpus: &[&dyn Pipeline],
    c: C,
    partitions: usize,
) {
    let srs = Srs::from_parameters(&generate(c.clone(), 3).unwrap());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let r: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
    let cpu = Prover::new(&srs, &CpuBackend::new())
        .prove(vec![c.clone(); partitions], &r, &s)
        .unwrap()
        .to_bytes();
    for gpu in gpus {
        let ours = Prover::new(&srs, *gpu)
            .prove(vec![c.clone(); partitions], &r, &s)
            .unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
        assert_eq!(
            ours.to_bytes(),
            cpu,
            "{name}: {} proof differs from the CPU's",
            gpu.name()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn gpu_proofs_equal_cpu_proofs() {
    let plain = gpu_util::backend("gpu_proofs_equal_cpu_proofs");
    if let Err(why) = probe() {
        panic!("backend opened but probe fails: {why}");
    }
    let piped = PipelinedGpu::new(0).expect("PipelinedGpu on GPU 0");
    let gpus: [&dyn Pipeline; 2] = [plain, &piped];
    same("mulchain", &gpus, MulChain::random(5000, 3, 1), 2);
    same("many_inputs", &gpus, ManyInputs::random(40, 2), 2);
    same("bits", &gpus, Bits::random(16, 3), 2);
    same("no_aux", &gpus, NoAux::random(4), 1);
    same("c_only", &gpus, COnlyAux::random(50, 5), 1);
    same("sha256", &gpus, Sha256Preimage::random(32, 6), 1);
}
