//! `cuzk srs …`: inspect a parameter file, build its decode cache, generate one for an example.

use std::path::PathBuf;
use std::time::Instant;

use cuzk_engine::circuits::Example;
use cuzk_srs::{inspect, CacheMode, CacheState, OpenOptions, Srs};

use crate::common::{example, Result};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Sections, counts, sizes and the state of the decode cache.
    Inspect {
        file: PathBuf,
        /// Decode cache directory (default: beside the file).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
    },
    /// Decode every point and write the decode cache (so later opens are a plain mmap).
    Decode {
        file: PathBuf,
        #[arg(long)]
        cache_dir: Option<PathBuf>,
        /// Also check that every point is in the prime-order subgroup.
        #[arg(long)]
        subgroup_check: bool,
    },
    /// Generate parameters for an example circuit (a local setup, for development).
    Generate {
        #[arg(long)]
        circuit: String,
        #[arg(long)]
        size: Option<usize>,
        #[arg(long)]
        out: PathBuf,
        /// Compute the fixed-base products on this CUDA GPU (same seed, byte-identical file).
        #[arg(long)]
        gpu: Option<usize>,
    },
}

fn opts(cache_dir: Option<PathBuf>, subgroup_check: bool) -> OpenOptions {
    OpenOptions {
        subgroup_check,
        cache: cache_dir.map(CacheMode::Dir).unwrap_or(CacheMode::Beside),
    }
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Inspect { file, cache_dir } => {
            let (layout, cache) = inspect(&file, &opts(cache_dir, false))?;
            println!(
                "file {} ({} bytes), domain 2^{}",
                file.display(),
                layout.file_len,
                layout.domain_size().trailing_zeros()
            );
            println!(
                "{:<10} {:>14} {:>12} {:>16}",
                "section", "offset", "count", "bytes"
            );
            for s in layout.vk_points.iter().chain([
                &layout.ic,
                &layout.h,
                &layout.l,
                &layout.a,
                &layout.b_g1,
                &layout.b_g2,
            ]) {
                println!(
                    "{:<10} {:>14} {:>12} {:>16}",
                    s.name,
                    s.offset,
                    s.count,
                    s.byte_len()
                );
            }
            match cache {
                CacheState::Disabled => println!("cache: disabled"),
                CacheState::Missing(p) => println!("cache: missing ({})", p.display()),
                CacheState::Valid(p) => println!("cache: valid ({})", p.display()),
                CacheState::Stale { cache, why } => {
                    println!("cache: stale ({}): {why}", cache.display())
                }
            }
        }
        Cmd::Decode {
            file,
            cache_dir,
            subgroup_check,
        } => {
            let start = Instant::now();
            let srs = crate::progress::phase(
                &format!("decoding {} (and writing its decode cache)", file.display()),
                || Srs::open(&file, &opts(cache_dir, subgroup_check)),
            )?;
            println!(
                "{:?} in {:.2} s, {} bytes of points",
                srs.origin(),
                start.elapsed().as_secs_f64(),
                srs.point_bytes()
            );
        }
        Cmd::Generate {
            circuit,
            size,
            out,
            gpu,
        } => {
            let (ex, size) = example(&circuit, size, 0)?;
            let start = Instant::now();
            let device = gpu.map(cuzk_engine::gpu::GpuDevice::open).transpose()?;
            let on = match &device {
                Some(d) => cuzk_engine::setup::SetupOn::Gpu(d),
                None => cuzk_engine::setup::SetupOn::Cpu,
            };
            let params = crate::progress::phase(
                &format!("generating parameters for {circuit} (size {size})"),
                || cuzk_engine::setup::generate_seeded_on(ex, Example::SETUP_SEED, on),
            )?;
            crate::progress::phase(&format!("writing {}", out.display()), || {
                cuzk_srs::write_params(&out, &params)
            })?;
            println!(
                "wrote {} ({circuit}, size {size}) in {:.2} s",
                out.display(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}
