//! `cuzk`: prove example circuits, inspect and prepare parameter files, benchmark.

mod bench_batch;
mod bench_cpu;
mod bench_gpus;
mod bench_kernels;
mod bench_porep;
mod bench_soak;
mod bench_synth;
mod bench_tenant;
mod common;
mod ctl;
mod daemon;
mod filecoin_args;
mod filecoin_cmd;
mod heap;
mod kernels_cmd;
mod progress;
mod prove;
mod prove_filecoin;
mod srs_cmd;
mod synth_c1_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Synthesis (bellperson gadgets building linear combinations) allocates small vectors on every
/// synthesis thread at once; mimalloc's per-thread heaps keep them from contending (`heap.rs`).
#[global_allocator]
static ALLOCATOR: heap::Heap = heap::Heap::from_env();

#[derive(Parser)]
#[command(name = "cuzk", version, about = "Groth16 (BLS12-381) proving engine")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove an example circuit end to end: parameters (generated once, then reused), a batch of
    /// partitions, self-verification, per-stage timings.
    Prove(prove::Args),
    /// Parameter files: inspect, decode (build the cache), generate for an example circuit.
    #[command(subcommand)]
    Srs(srs_cmd::Cmd),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Run the engine as a daemon, controlled over a unix socket.
    Daemon(daemon::Args),
    /// Control a running daemon.
    Ctl(ctl::Args),
    /// CUDA kernels: build the kernel cache ahead of time (NVRTC only, no GPU needed).
    #[command(subcommand)]
    Kernels(kernels_cmd::Cmd),
    /// Filecoin parameters (dev setup, layouts) and sample inputs sealed on the CPU.
    #[command(subcommand)]
    Filecoin(filecoin_cmd::Cmd),
}

#[derive(Subcommand)]
enum BenchCmd {
    /// cuzk's CPU prover against bellperson's `create_proof`, side by side, same circuits.
    Cpu(bench_cpu::Args),
    /// Jobs through the actor pipeline: one line per proof, then s/proof (`--gpus-sweep 1,2`: on
    /// 1 then 2 devices, last line `gpus1_s_per_proof=… gpus2_s_per_proof=…`).
    Batch(bench_batch::Args),
    /// The CUDA kernels alone on one GPU; last line `msm_g1_2p26_ms=… ntt_2p27_ms=…`.
    Kernels(bench_kernels::Args),
    /// PoRep C2 proofs of a real C1 output: one alone, then a stream; last line
    /// `porep_ms_per_proof=… porep_latency_ms=… sector=…`.
    Porep(bench_porep::Args),
    /// A PoRep partition's witness synthesis on the CPU: filecoin-proofs' circuit, cuzk's cut
    /// (lean SHA-256) on one thread and on all; last line `synth_reference_ms=… synth_lean_ms=…
    /// synth_parallel_ms=… threads=…`.
    Synth(bench_synth::Args),
    /// N small proofs with a mix of sizes, priorities and cancellations, every one verified;
    /// RSS, fds, VRAM reserved and pinned bytes sampled; last line `soak_proofs=… answered=…`.
    Soak(bench_soak::Args),
    /// Another tenant of a GPU: holds device memory in phases (`--phases LEAVE_MIB:SECONDS,…`),
    /// to test the engine against memory other processes take; last line `tenant_held_mib_max=…`.
    Tenant(bench_tenant::Args),
}

/// Where parameters for example circuits are kept: `$CUZK_PARAMS_DIR`, else
/// `$XDG_CACHE_HOME/cuzk/params`, else `~/.cache/cuzk/params`.
pub fn default_params_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUZK_PARAMS_DIR") {
        return d.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("cuzk").join("params")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // cuzk-engine's `log` lines (e.g. `CUZK_MSM_PROFILE` in `bench kernels`) into the slog logger.
    cuzk_actors::log::bridge();
    let result = match cli.cmd {
        Cmd::Prove(a) => prove::run(a),
        Cmd::Srs(c) => srs_cmd::run(c),
        Cmd::Daemon(a) => daemon::run(a),
        Cmd::Ctl(a) => ctl::run(a),
        Cmd::Kernels(c) => kernels_cmd::run(c),
        Cmd::Filecoin(c) => filecoin_cmd::run(c),
        Cmd::Bench(BenchCmd::Cpu(a)) => bench_cpu::run(a),
        Cmd::Bench(BenchCmd::Batch(a)) => bench_batch::run(a),
        Cmd::Bench(BenchCmd::Kernels(a)) => bench_kernels::run(a),
        Cmd::Bench(BenchCmd::Porep(a)) => bench_porep::run(a),
        Cmd::Bench(BenchCmd::Soak(a)) => bench_soak::run(a),
        Cmd::Bench(BenchCmd::Synth(a)) => bench_synth::run(a),
        Cmd::Bench(BenchCmd::Tenant(a)) => bench_tenant::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk: error: {e}");
            ExitCode::FAILURE
        }
    }
}
