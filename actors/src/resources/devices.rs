//! Choosing the devices the pipeline runs on: the CUDA GPUs `engine.gpus` selects (every one by
//! default; with their free memory and the driver's pinning), or the CPU backend (`cpu_devices`
//! of them). With `auto`, a machine without a usable GPU says why and falls back to the CPU; with
//! `cuda`, that is an error.
//!
//! The engine numbers its devices 0, 1, … in the order selected (its device index: status, logs,
//! budgets); each GPU's name carries its CUDA ordinal and PCI bus id. `CUDA_VISIBLE_DEVICES` is
//! applied by the driver before any of this: ordinals are positions in that list.
//!
//! A selection this machine cannot satisfy is an [`EngineError::Config`] about `engine.gpus`;
//! devices that cannot be opened, an [`EngineError::Devices`].

use std::sync::Arc;

use cuzk_engine::gpu::{probe, GpuBackend, GpuDevice, PipelinedGpu};
use cuzk_engine::{CpuBackend, Pipeline};

use serde::{Deserialize, Serialize};

use crate::resources::cuda_pin::CudaPin;
use crate::resources::pinner::{CountingPin, PinApi};
use crate::EngineError;

/// Which backend the devices run (`engine.backend`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    Auto,
    Cpu,
    Cuda,
}

impl std::str::FromStr for BackendChoice {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, EngineError> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" => Ok(BackendChoice::Cuda),
            other => Err(EngineError::config(
                "engine.backend",
                format!("unknown backend `{other}`; choose auto, cpu or cuda"),
            )),
        }
    }
}

/// Where the SRS bases live on a GPU (`engine.srs_residency`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Residency {
    Auto,
    Host,
    Device,
}

impl std::str::FromStr for Residency {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, EngineError> {
        match s {
            "auto" => Ok(Residency::Auto),
            "host" => Ok(Residency::Host),
            "device" => Ok(Residency::Device),
            other => Err(EngineError::config(
                "engine.srs_residency",
                format!("unknown SRS residency `{other}`; choose auto, host or device"),
            )),
        }
    }
}

pub struct Devices {
    pub backends: Vec<Arc<dyn Pipeline>>,
    /// Free device memory per backend at start (the CPU backend: unlimited).
    pub free: Vec<u64>,
    pub pin: Box<dyn PinApi>,
    /// One line for logs: what was chosen and, for a fallback, why.
    pub description: String,
    /// Whether the GPUs keep the SRS resident (`PipelinedGpu`); the dispatcher then reserves
    /// each GPU's resident bases and one MSM's scratch (`EngineConfig::srs_resident`).
    pub srs_resident: bool,
    /// One name per backend: the GPU's with its CUDA ordinal and PCI bus id
    /// (`NVIDIA H200 (cuda 1, pci 0000:19:00.0)`), or `cpu`.
    pub names: Vec<String>,
    /// Per backend (the engine's device index): its CUDA ordinal (`None`: a CPU backend).
    pub ordinals: Vec<Option<usize>>,
}

/// Which devices to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// CUDA ordinals (`engine.gpus`), in the engine's device order; empty = every GPU.
    pub gpus: Vec<usize>,
    /// CPU backends on the CPU backend (`engine.cpu_devices`), at least 1.
    pub cpu_devices: usize,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            gpus: Vec::new(),
            cpu_devices: 1,
        }
    }
}

/// The CUDA ordinals to open, given `count` visible devices and `engine.gpus` (empty = all of
/// them, in order); an ordinal out of range or listed twice is an [`EngineError::Config`] about
/// `engine.gpus`, no GPU at all [`EngineError::Devices`].
pub fn select(count: usize, gpus: &[usize]) -> Result<Vec<usize>, EngineError> {
    if count == 0 {
        return Err(EngineError::Devices("no CUDA GPU is visible".into()));
    }
    if gpus.is_empty() {
        return Ok((0..count).collect());
    }
    for (i, &g) in gpus.iter().enumerate() {
        if g >= count {
            return Err(EngineError::config(
                "engine.gpus",
                format!(
                    "engine.gpus = {gpus:?}: CUDA device {g} does not exist ({count} visible: \
                     ordinals 0..={})",
                    count - 1
                ),
            ));
        }
        if gpus[..i].contains(&g) {
            return Err(EngineError::config(
                "engine.gpus",
                format!("engine.gpus = {gpus:?}: CUDA device {g} is listed twice"),
            ));
        }
    }
    Ok(gpus.to_vec())
}

/// `CUDA_VISIBLE_DEVICES`, for messages about ordinals (they are positions in it when set).
fn visible_note() -> String {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => format!(" (CUDA_VISIBLE_DEVICES={v}: ordinals are positions in that list)"),
        Err(_) => String::new(),
    }
}

/// The CUDA ordinals `gpus` selects on this machine (no context is created), or why there are
/// none usable.
pub fn cuda_ordinals(gpus: &[usize]) -> Result<Vec<usize>, EngineError> {
    probe().map_err(EngineError::Devices)?;
    let count = cudarc::driver::CudaContext::device_count()
        .map_err(|e| EngineError::Devices(format!("cuDeviceGetCount: {e:?}")))?
        as usize;
    // The same error, naming `CUDA_VISIBLE_DEVICES` where it renumbers the ordinals.
    select(count, gpus).map_err(|e| match e {
        EngineError::Config { key, detail } => {
            EngineError::config(key, format!("{detail}{}", visible_note()))
        }
        EngineError::Devices(detail) => EngineError::Devices(format!("{detail}{}", visible_note())),
        other => other,
    })
}

/// The PCI bus id (`domain:bus:device.0`) of a GPU, if the driver tells it.
fn pci_bus_id(ctx: &cudarc::driver::CudaContext) -> Option<String> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let domain = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID).ok()?;
    let bus = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID).ok()?;
    let device = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID).ok()?;
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}.0"))
}

fn cpu(why: Option<String>, n: usize) -> Devices {
    let threads = rayon::current_num_threads();
    let n = n.max(1);
    let what = if n == 1 {
        format!("cpu ({threads} threads")
    } else {
        format!("cpu × {n} devices ({threads} threads shared")
    };
    Devices {
        backends: (0..n)
            .map(|_| Arc::new(CpuBackend::new()) as Arc<dyn Pipeline>)
            .collect(),
        free: vec![crate::resources::budget::UNLIMITED; n],
        pin: Box::new(CountingPin::default()),
        srs_resident: false,
        names: vec!["cpu".into(); n],
        ordinals: vec![None; n],
        description: match why {
            Some(w) => format!("{what}; no CUDA: {w})"),
            None => format!("{what})"),
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
/// known; `reserve`: bytes left free for the driver. Neither decides the backend any more: the
/// dispatcher plans residency per GPU budget (`tier::GpuPlan`).
fn cuda(
    residency: Residency,
    resident: Option<u64>,
    reserve: u64,
    gpus: &[usize],
) -> Result<Devices, EngineError> {
    let ordinals = cuda_ordinals(gpus)?;
    if ordinals.is_empty() {
        return Err(EngineError::Devices("no CUDA GPU selected".into()));
    }
    let mut backends: Vec<Arc<dyn Pipeline>> = Vec::new();
    let mut free = Vec::new();
    let mut names = Vec::new();
    let mut gpu_names = Vec::new();
    let mut pin_ctx = None;
    // `auto` and `device` run `PipelinedGpu`: the dispatcher decides from each GPU's budget what
    // stays resident and which tier partitions take (`tier::GpuPlan`), down to the streamed tier
    // of small cards. `host` keeps the plain `GpuBackend` (bases uploaded with every call).
    let staging = match residency {
        Residency::Device | Residency::Auto => true,
        Residency::Host => false,
    };
    let _ = (resident, reserve);
    for (index, &i) in ordinals.iter().enumerate() {
        let (b, dev): (Arc<dyn Pipeline>, &GpuDevice);
        let (plain, piped);
        if staging {
            piped =
                Arc::new(PipelinedGpu::new(i).map_err(|e| EngineError::Devices(e.to_string()))?);
            dev = piped.inner().device();
            b = piped.clone();
        } else {
            plain = Arc::new(GpuBackend::new(i).map_err(|e| EngineError::Devices(e.to_string()))?);
            dev = plain.device();
            b = plain.clone();
        }
        let ctx = dev.ctx.clone();
        trim(&ctx);
        let (f, total) = ctx
            .mem_get_info()
            .map_err(|e| EngineError::Devices(format!("cuMemGetInfo on CUDA device {i}: {e:?}")))?;
        let id = match pci_bus_id(&ctx) {
            Some(bus) => format!("cuda {i}, pci {bus}"),
            None => format!("cuda {i}"),
        };
        gpu_names.push(format!("{} ({id})", dev.name));
        names.push(format!(
            "device {index} = {} ({id}; {} of {} MiB free{})",
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
    let ctx = pin_ctx.ok_or_else(|| EngineError::Devices("no CUDA GPU".into()))?;
    Ok(Devices {
        backends,
        free,
        pin: Box::new(CudaPin::new(ctx)),
        description: format!("cuda: {}", names.join(", ")),
        srs_resident: staging,
        names: gpu_names,
        ordinals: ordinals.into_iter().map(Some).collect(),
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
) -> Result<Devices, EngineError> {
    open_on(choice, residency, resident, reserve, &Placement::default())
}

/// [`open`] on the devices `place` selects: those GPUs (an ordinal out of range or listed twice
/// is an error, also under `auto`), or that many CPU backends.
pub fn open_on(
    choice: BackendChoice,
    residency: Residency,
    resident: Option<u64>,
    reserve: u64,
    place: &Placement,
) -> Result<Devices, EngineError> {
    let n = place.cpu_devices;
    match choice {
        BackendChoice::Cpu => Ok(cpu(None, n)),
        BackendChoice::Cuda => cuda(residency, resident, reserve, &place.gpus),
        BackendChoice::Auto => match cuda(residency, resident, reserve, &place.gpus) {
            Ok(d) => Ok(d),
            // A selection this machine's GPUs cannot satisfy is a configuration error, not a
            // reason to prove on the CPU.
            Err(why @ EngineError::Config { .. }) => Err(why),
            Err(why) => Ok(cpu(Some(why.to_string()), n)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_select_ordinals_in_order_and_refuse_bad_entries() {
        assert_eq!(select(2, &[]).unwrap(), vec![0, 1]);
        assert_eq!(select(4, &[2, 0]).unwrap(), vec![2, 0]);
        assert_eq!(select(1, &[0]).unwrap(), vec![0]);
        let e = select(2, &[0, 2]).unwrap_err();
        assert!(
            matches!(&e, EngineError::Config { key, .. } if key == "engine.gpus"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("engine.gpus")
                && e.contains("CUDA device 2 does not exist")
                && e.contains("0..=1"),
            "{e}"
        );
        let e = select(3, &[1, 0, 1]).unwrap_err().to_string();
        assert!(
            e.contains("engine.gpus") && e.contains("device 1 is listed twice"),
            "{e}"
        );
        assert!(select(0, &[])
            .unwrap_err()
            .to_string()
            .contains("no CUDA GPU"));
        let e = select(0, &[0]).unwrap_err();
        assert!(
            matches!(&e, EngineError::Devices(m) if m.contains("no CUDA GPU")),
            "{e:?}"
        );
    }

    #[test]
    fn cpu_devices_open_that_many_cpu_backends() {
        let place = Placement {
            gpus: vec![5],
            cpu_devices: 3,
        };
        let d = open_on(BackendChoice::Cpu, Residency::Auto, None, 0, &place).unwrap();
        assert_eq!(
            (d.backends.len(), d.free.len(), d.names.len(), d.ordinals),
            (3, 3, 3, vec![None; 3])
        );
        assert!(d.description.contains("3 devices"), "{}", d.description);
        let d = open_on(
            BackendChoice::Cpu,
            Residency::Auto,
            None,
            0,
            &Placement::default(),
        )
        .unwrap();
        assert_eq!(d.backends.len(), 1);
    }
}
