//! `cuzk kernels build`: compiles every kernel module with NVRTC for the named architectures into
//! the kernel cache (`CUZK_KERNEL_CACHE`, else the user's cache directory), on any machine with
//! NVRTC and without a GPU, so that a GPU host (or a deployment image) starts without compiling.
//! Options set in `CUZK_NVRTC_OPTIONS` (the tuning switches) are part of the cache key, as at run
//! time.

use cuzk_engine::gpu::nvrtc::{cache_dir, compile_all};
use cuzk_engine::gpu::sources::Module;

use crate::common::Result;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Compile every module for each architecture into the kernel cache.
    Build(BuildArgs),
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// Compute capabilities, e.g. `90` for an H100/H200 (sm_90), `89`, `80`.
    #[arg(long, value_delimiter = ',', default_value = "90")]
    arch: Vec<String>,
}

fn capability(s: &str) -> Result<(i32, i32)> {
    let digits = s.trim_start_matches("sm_");
    let n: i32 = digits
        .parse()
        .map_err(|_| format!("architecture `{s}`: expected digits such as 90 or sm_90"))?;
    if !(50..=200).contains(&n) {
        return Err(format!("architecture `{s}` is not a CUDA compute capability").into());
    }
    Ok((n / 10, n % 10))
}

pub fn run(c: Cmd) -> Result<()> {
    let Cmd::Build(a) = c;
    let caps = a
        .arch
        .iter()
        .map(|s| capability(s))
        .collect::<Result<Vec<_>>>()?;
    println!("# kernel cache: {}", cache_dir().display());
    for cc in caps {
        for k in compile_all(&Module::ALL, cc, true) {
            let k = k?;
            let how = if k.from_cache {
                "already cached".to_string()
            } else {
                format!("compiled in {:.1} s", k.compile_secs)
            };
            println!(
                "{:<9} {}  {:>8} bytes  {how}",
                k.module.name(),
                k.arch,
                k.cubin.len()
            );
        }
    }
    Ok(())
}
