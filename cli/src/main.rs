//! `cuzk` (the cuzk-cli crate): prove example circuits, inspect and prepare parameter files,
//! benchmark (`bench/`), run the daemon and control it.

mod bench;
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
mod synth_post_cmd;
mod synth_snap_cmd;
mod verify;

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
    Bench(bench::Cmd),
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
    /// Check a Filecoin proof file with filecoin-proofs' verifier of its kind, from the same
    /// inputs as `cuzk prove` and `--proof FILE`.
    Verify(verify::Args),
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
        Cmd::Bench(c) => bench::run(c),
        Cmd::Verify(a) => verify::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk: error: {e}");
            ExitCode::FAILURE
        }
    }
}
