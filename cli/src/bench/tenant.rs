//! `cuzk bench tenant`: another tenant of a GPU, for testing the engine against memory other
//! processes take (issue 16). It holds device memory in phases, `LEAVE_MIB:SECONDS` each: at the
//! start of a phase it allocates (plain `cuMemAlloc`, written once so the pages are committed) or
//! frees until only LEAVE_MIB of the device stays free, then holds that for SECONDS. One line per
//! phase, with what the driver reports free; the last line `tenant_held_mib_max=…`.

use std::time::Duration;

use cudarc::driver::{result, sys, CudaContext};

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The CUDA ordinal of the GPU to occupy.
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// Phases, each `LEAVE_MIB:SECONDS`: leave this much of the device free, for this long.
    #[arg(long, value_delimiter = ',', required = true)]
    phases: Vec<String>,
}

/// Allocations are made in pieces of this size, so that a phase can give back part of them.
const PIECE: usize = 256 << 20;

fn phase(s: &str) -> Result<(u64, u64)> {
    let (leave, secs) = s
        .split_once(':')
        .ok_or_else(|| format!("phase `{s}`: expected LEAVE_MIB:SECONDS, e.g. 8192:30"))?;
    let leave: u64 = leave
        .parse()
        .map_err(|_| format!("phase `{s}`: LEAVE_MIB `{leave}` is not a number"))?;
    let secs: u64 = secs
        .parse()
        .map_err(|_| format!("phase `{s}`: SECONDS `{secs}` is not a number"))?;
    Ok((leave << 20, secs))
}

/// Device memory held by this process, freed on drop.
struct Held {
    pieces: Vec<sys::CUdeviceptr>,
}

impl Held {
    fn bytes(&self) -> u64 {
        (self.pieces.len() * PIECE) as u64
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for p in self.pieces.drain(..) {
            // SAFETY: each pointer came from `malloc_sync` on this context and is freed once.
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    let phases = a
        .phases
        .iter()
        .map(|s| phase(s))
        .collect::<Result<Vec<_>>>()?;
    cuzk_engine::gpu::probe()?;
    let ctx = CudaContext::new(a.gpu).map_err(|e| format!("opening GPU {}: {e:?}", a.gpu))?;
    ctx.bind_to_thread()
        .map_err(|e| format!("binding GPU {}: {e:?}", a.gpu))?;
    let mut held = Held { pieces: Vec::new() };
    let mut most = 0u64;
    for (i, (leave, secs)) in phases.into_iter().enumerate() {
        let (free, total) = ctx
            .mem_get_info()
            .map_err(|e| format!("cuMemGetInfo on GPU {}: {e:?}", a.gpu))?;
        let mut free = free as u64;
        while free > leave + PIECE as u64 {
            // SAFETY: a plain device allocation, freed by `Held`'s drop.
            let p = match unsafe { result::malloc_sync(PIECE) } {
                Ok(p) => p,
                Err(e) => {
                    eprintln!(
                        "tenant: allocation stopped at {} MiB held: {e:?}",
                        held.bytes() >> 20
                    );
                    break;
                }
            };
            // SAFETY: `p` is PIECE bytes of device memory just allocated.
            unsafe { result::memset_d8_sync(p, 0xA5, PIECE) }
                .map_err(|e| format!("writing the held memory: {e:?}"))?;
            held.pieces.push(p);
            free = free.saturating_sub(PIECE as u64);
        }
        while free < leave && !held.pieces.is_empty() {
            let p = held.pieces.pop().expect("not empty");
            // SAFETY: allocated by `malloc_sync` above, freed once.
            unsafe { result::free_sync(p) }.map_err(|e| format!("cuMemFree: {e:?}"))?;
            free += PIECE as u64;
        }
        most = most.max(held.bytes());
        let (now_free, _) = ctx
            .mem_get_info()
            .map_err(|e| format!("cuMemGetInfo on GPU {}: {e:?}", a.gpu))?;
        println!(
            "tenant phase={i} gpu={} held_mib={} free_mib={} total_mib={} seconds={secs}",
            a.gpu,
            held.bytes() >> 20,
            now_free >> 20,
            total >> 20
        );
        std::thread::sleep(Duration::from_secs(secs));
    }
    drop(held);
    println!("tenant_held_mib_max={}", most >> 20);
    Ok(())
}
