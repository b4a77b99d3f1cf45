//! Kernel benchmark on GPU 0: `cargo run --release --example gpu_bench [max_log] [reps]`.
//! The `cuzk bench kernels` subcommand calls the same function.

use cuzk_engine::gpu::bench::{run_kernel_bench, KernelBenchOptions};
use cuzk_engine::gpu::GpuDevice;

fn main() {
    let mut opts = KernelBenchOptions::default();
    let args: Vec<String> = std::env::args().collect();
    if let Some(v) = args.get(1).and_then(|s| s.parse().ok()) {
        opts.max_log = v;
    }
    if let Some(v) = args.get(2).and_then(|s| s.parse().ok()) {
        opts.reps = v;
    }
    let dev = match GpuDevice::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::exit(2);
        }
    };
    for c in &dev.compiled {
        eprintln!("module {:>9} {} {}", c.module.name(), c.arch, if c.from_cache { "from cache".to_string() } else { format!("compiled in {:.1} s", c.compile_secs) });
    }
    if let Err(e) = run_kernel_bench(&dev, &opts) {
        eprintln!("gpu_bench: {e}");
        std::process::exit(1);
    }
}
