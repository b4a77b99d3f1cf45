//! `cuzk bench kernels`: the CUDA kernels alone on one GPU (MSM G1/G2, NTT, fused H, batch
//! addition), device-resident inputs, median of several runs timed with CUDA events. The last
//! line is `msm_g1_2p26_ms=… ntt_2p27_ms=…`.

use cuzk_engine::gpu::bench::{run_kernel_bench, KernelBenchOptions};
use cuzk_engine::gpu::GpuDevice;

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// Largest log2 size to run (27 covers every size of the standard table).
    #[arg(long, default_value_t = 27)]
    max_log: u32,
    /// Timed runs per figure (the median is printed), after one warm-up.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Only the families whose name contains this (field, msm_g1, msm_g2, ntt, h, batch_add).
    #[arg(long)]
    only: Option<String>,
    /// Also time each MSM family's largest size with these window sizes (e.g. `16,20,22`).
    #[arg(long, value_delimiter = ',')]
    msm_windows: Vec<u32>,
}

pub fn run(a: Args) -> Result<()> {
    let dev = GpuDevice::open(a.gpu)?;
    for c in &dev.compiled {
        eprintln!(
            "module {:>9} {} {}",
            c.module.name(),
            c.arch,
            if c.from_cache {
                "from cache".to_string()
            } else {
                format!("compiled in {:.1} s", c.compile_secs)
            }
        );
    }
    let opts = KernelBenchOptions {
        reps: a.reps.max(1),
        max_log: a.max_log,
        only: a.only,
        msm_windows: a.msm_windows,
        ..Default::default()
    };
    run_kernel_bench(&dev, &opts)?;
    Ok(())
}
