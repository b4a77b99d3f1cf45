//! The streamed tier on a GPU (`PipelinedGpu`, `Prepared::stream`): bases streamed in chunks
//! through two device buffers, a, b, c from the recording on the host or on the device (its
//! matrices streamed in row pieces, tiny pieces here, or resident with the queries' scalars built
//! there from the witness), the queries' scalars uploaded one at a time, or only the bases of
//! their nonzero scalars gathered (`streamed_gather.rs`: bits and sha256 gather, mulchain does
//! not; with the bases taken as registered none gathers, and the tails' scalars cross packed),
//! the witness uploaded packed where the device uploads it (`packed_witness.rs`: bits and
//! sha256 pack; mulchain's dense witness does not) — proofs byte-identical to the CPU backend's for the same `r, s`, with chunks that do and
//! do not divide the bases, many ones (chunked batch additions), and with the bases resident. Ignored (`#[ignore]`, reason given) where there is no GPU: `make test-gpu`.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_engine::circuits::{Bits, ManyInputs, MulChain, Sha256Preimage};
use cuzk_engine::gpu::stream_plan::StreamTier;
use cuzk_engine::gpu::PipelinedGpu;
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, ProveOptions, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;

mod gpu_util;

fn same<C: Circuit<Scalar> + Clone + Send>(name: &str, gpu: &PipelinedGpu, c: C) {
    let srs = Srs::from_parameters(&generate(c.clone(), 3).unwrap());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let r = [Scalar::random(&mut rng), Scalar::random(&mut rng)];
    let s = [Scalar::random(&mut rng), Scalar::random(&mut rng)];
    let cpu = Prover::new(&srs, &CpuBackend::new())
        .prove(vec![c.clone(), c.clone()], &r, &s)
        .unwrap()
        .to_bytes();
    // (chunk, resident bases, device products, resident recording, pinned, overlap slots);
    // `PipelinedGpu` leaves the splits to the device (`Prover` sets `splits_on_device` for it).
    // `pinned`: the bases taken as registered (copied straight; here from pageable memory, which
    // the driver copies too), so no query gathers and the tails' scalars cross packed; with
    // overlap slots, the queries' chunks run between the H-MSM's (`streamed_overlap.rs`), also
    // with fewer slots than chunks a step and with chunks that do not divide the bases.
    for (chunk, resident_bases, device_products, resident_recording, pinned, overlap_slots) in [
        (64u64, false, false, false, false, 0),
        (4096 + 64, false, true, false, false, 0),
        (4096 + 64, false, true, false, true, 0),
        (4096 + 64, false, true, false, true, 3),
        (1024, false, false, false, true, 8),
        (1 << 22, false, true, false, true, 8),
        (1 << 22, false, true, false, false, 0),
        (1 << 22, true, false, false, false, 0),
        (1 << 22, true, true, false, false, 0),
        (1 << 22, true, true, true, false, 0),
        (4096 + 64, false, true, true, false, 0),
    ] {
        for recorded in [true, false] {
            let mut p = Prover::new(&srs, gpu);
            p.opts = ProveOptions {
                stream: Some(StreamTier {
                    chunk,
                    chunk_g2: (chunk / 2).max(64),
                    resident_bases,
                    device_products,
                    resident_recording,
                    pinned_bases: pinned,
                    pinned_recording: pinned,
                    overlap_slots,
                }),
                ..ProveOptions::default()
            };
            p.opts.recorded.enabled = recorded;
            let ours = p
                .prove(vec![c.clone(), c.clone()], &r, &s)
                .unwrap_or_else(|e| panic!("{name}, chunk {chunk}: {e}"));
            assert_eq!(
                ours.to_bytes(),
                cpu,
                "{name}: streamed (chunk {chunk}, resident {resident_bases}, device products {device_products}, resident recording {resident_recording}, pinned {pinned}, overlap slots {overlap_slots}, recorded {recorded}) differs from the CPU"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn streamed_tier_proofs_on_a_gpu_equal_cpu_proofs() {
    let _ = gpu_util::backend("streamed_tier_proofs_on_a_gpu_equal_cpu_proofs");
    let gpu = PipelinedGpu::new(0).expect("PipelinedGpu on GPU 0");
    same("mulchain", &gpu, MulChain::random(20_000, 3, 1));
    same("bits", &gpu, Bits::random(16, 3));
    same("many_inputs", &gpu, ManyInputs::random(40, 2));
    same("sha256", &gpu, Sha256Preimage::random(32, 6));
}
