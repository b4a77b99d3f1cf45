//! Choosing the devices the pipeline runs on: every CUDA GPU (with its free memory and the
//! driver's pinning), or the CPU backend. With `auto`, a machine without a usable GPU says why and
//! falls back to the CPU; with `cuda`, that is an error.

use std::sync::Arc;

use cuzk_engine::gpu::{probe, GpuBackend, GpuDevice, PipelinedGpu};
use cuzk_engine::{Backend, CpuBackend};

use crate::cuda_pin::CudaPin;
use crate::pinner::{CountingPin, PinApi};
use crate::settings::{BackendChoice, Residency};

pub struct Devices {
    pub backends: Vec<Arc<dyn Backend>>,
    /// Free device memory per backend at start (the CPU backend: unlimited).
    pub free: Vec<u64>,
    pub pin: Box<dyn PinApi>,
    /// One line for logs: what was chosen and, for a fallback, why.
    pub description: String,
    /// Whether the GPUs keep the SRS resident (`PipelinedGpu`); the dispatcher then reserves
    /// each GPU's resident bases and one MSM's scratch (`EngineConfig::srs_resident`).
    pub srs_resident: bool,
    /// One name per backend (the GPU's, or `cpu`).
    pub names: Vec<String>,
}

fn cpu(why: Option<String>) -> Devices {
    let threads = rayon::current_num_threads();
    Devices {
        backends: vec![Arc::new(CpuBackend::new())],
        free: vec![crate::budget::UNLIMITED],
        pin: Box::new(CountingPin::default()),
        srs_resident: false,
        names: vec!["cpu".into()],
        description: match why {
            Some(w) => format!("cpu ({threads} threads; no CUDA: {w})"),
            None => format!("cpu ({threads} threads)"),
        },
    }
}

/// Gives the pool's unused memory back before free memory is read (a failure only leaves the
/// budget smaller, so it is reported and not fatal).
fn trim(ctx: &cudarc::driver::CudaContext) {
    if let Err(e) = cuzk_engine::gpu::pool::trim(ctx, 0) {
        slog::warn!(
            crate::log::component("devices"),
            "{}; the VRAM budget is read without trimming the pool",
            e
        );
    }
}

/// `resident`: bytes the SRS keeps on each GPU when resident (bases plus one MSM's scratch), if
/// known (it decides `auto`); `reserve`: bytes left free for the driver.
fn cuda(residency: Residency, resident: Option<u64>, reserve: u64) -> Result<Devices, String> {
    probe()?;
    let count = cudarc::driver::CudaContext::device_count()
        .map_err(|e| format!("cuDeviceGetCount: {e:?}"))? as usize;
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    let mut free = Vec::new();
    let mut names = Vec::new();
    let mut gpu_names = Vec::new();
    let mut pin_ctx = None;
    // Decide residency from GPU 0's free memory (the GPUs of one host are alike).
    let free0 = {
        let ctx = cudarc::driver::CudaContext::new(0)
            .map_err(|e| format!("cuCtxCreate on GPU 0: {e:?}"))?;
        // The pool keeps freed memory (an engine started before in this process may have left
        // some): free memory is read after a trim.
        trim(&ctx);
        ctx.mem_get_info()
            .map_err(|e| format!("cuMemGetInfo on GPU 0: {e:?}"))?
            .0 as u64
    };
    let staging = match residency {
        Residency::Device => true,
        Residency::Host => false,
        Residency::Auto => resident.is_none_or(|need| need + reserve <= free0),
    };
    for i in 0..count {
        let (b, dev): (Arc<dyn Backend>, &GpuDevice);
        let (plain, piped);
        if staging {
            piped = Arc::new(PipelinedGpu::new(i).map_err(|e| e.to_string())?);
            dev = piped.inner().device();
            b = piped.clone();
        } else {
            plain = Arc::new(GpuBackend::new(i).map_err(|e| e.to_string())?);
            dev = plain.device();
            b = plain.clone();
        }
        let ctx = dev.ctx.clone();
        trim(&ctx);
        let (f, total) = ctx
            .mem_get_info()
            .map_err(|e| format!("cuMemGetInfo on GPU {i}: {e:?}"))?;
        gpu_names.push(dev.name.clone());
        names.push(format!(
            "{} ({} of {} MiB free{})",
            dev.name,
            f >> 20,
            total >> 20,
            if staging {
                ", staged, resident SRS"
            } else {
                ""
            }
        ));
        pin_ctx.get_or_insert(ctx);
        free.push(f as u64);
        backends.push(b);
    }
    let ctx = pin_ctx.ok_or("no CUDA GPU")?;
    Ok(Devices {
        backends,
        free,
        pin: Box::new(CudaPin::new(ctx)),
        description: format!("cuda: {}", names.join(", ")),
        srs_resident: staging,
        names: gpu_names,
    })
}

/// Opens the devices. On GPUs, `residency` picks `PipelinedGpu` (resident SRS, copy-stream
/// staging) or `GpuBackend`; `resident` is what a resident SRS needs per GPU (bases and one MSM's
/// scratch, see `tier::Dims`), when the SRS is known; `reserve` is kept free for the driver.
pub fn open(
    choice: BackendChoice,
    residency: Residency,
    resident: Option<u64>,
    reserve: u64,
) -> Result<Devices, String> {
    match choice {
        BackendChoice::Cpu => Ok(cpu(None)),
        BackendChoice::Cuda => cuda(residency, resident, reserve),
        BackendChoice::Auto => {
            Ok(cuda(residency, resident, reserve).unwrap_or_else(|why| cpu(Some(why))))
        }
    }
}
