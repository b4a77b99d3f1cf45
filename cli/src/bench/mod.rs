//! `cuzk bench`: the benchmarks, one subcommand a file; `gpus.rs` is the `--gpus-sweep` that
//! `batch` and `porep` share.

mod batch;
mod cpu;
mod gpus;
mod kernels;
mod porep;
mod post;
mod setup;
mod soak;
mod synth;
mod tenant;

use clap::Subcommand;

use crate::common::Result;

#[derive(Subcommand)]
pub enum Cmd {
    /// cuzk's CPU prover against bellperson's `create_proof`, side by side, same circuits.
    Cpu(cpu::Args),
    /// Jobs through the actor pipeline: one line per proof, then s/proof (`--gpus-sweep 1,2`: on
    /// 1 then 2 devices, last line `gpus1_s_per_proof=… gpus2_s_per_proof=…`).
    Batch(batch::Args),
    /// The CUDA kernels alone on one GPU; last line `msm_g1_2p26_ms=… ntt_2p27_ms=…`.
    Kernels(kernels::Args),
    /// PoRep C2 proofs of a real C1 output: one alone, then a stream; last line
    /// `porep_ms_per_proof=… porep_latency_ms=… sector=…`.
    Porep(porep::Args),
    /// PoSt latency alone and beside a PoRep stream, SnapDeals s/proof (synthetic inputs);
    /// last line `post_ms winning_alone_p50=… winning_loaded_p99=… … snap_ms_per_proof=… sector=…`.
    Post(post::Args),
    /// A PoRep partition's witness synthesis on the CPU: filecoin-proofs' circuit, cuzk's cut
    /// (lean SHA-256) on one thread and on all; last line `synth_reference_ms=… synth_lean_ms=…
    /// synth_parallel_ms=… threads=…`.
    Synth(synth::Args),
    /// N small proofs with a mix of sizes, priorities and cancellations, every one verified;
    /// RSS, fds, VRAM reserved and pinned bytes sampled; last line `soak_proofs=… answered=…`.
    Soak(soak::Args),
    /// Another tenant of a GPU: holds device memory in phases (`--phases LEAVE_MIB:SECONDS,…`),
    /// to test the engine against memory other processes take; last line `tenant_held_mib_max=…`.
    Tenant(tenant::Args),
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Cpu(a) => cpu::run(a),
        Cmd::Batch(a) => batch::run(a),
        Cmd::Kernels(a) => kernels::run(a),
        Cmd::Porep(a) => porep::run(a),
        Cmd::Post(a) => post::run(a),
        Cmd::Soak(a) => soak::run(a),
        Cmd::Synth(a) => synth::run(a),
        Cmd::Tenant(a) => tenant::run(a),
    }
}
