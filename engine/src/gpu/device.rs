//! Device detection, context and stream, and the loaded kernel modules.
//!
//! Host threads sleep on the driver while they wait for a GPU (`CU_CTX_SCHED_BLOCKING_SYNC`,
//! waited-on events `CU_EVENT_BLOCKING_SYNC`), so a waiting thread leaves its core to synthesis;
//! `engine.gpu_wait = "spin"` leaves the driver's choice. Device-timed steps are
//! placed on the host clock by [`GpuDevice::host_time`], from an event taken when the device
//! opens.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::{sys as dsys, CudaContext, CudaFunction, CudaStream, LaunchConfig};
use cudarc::nvrtc::Ptx;

use super::nvrtc::{compile_all, nvrtc_present, Compiled};
use super::sources::Module;
use super::{backend_err, Result};

/// Whether host threads sleep while they wait for a GPU (the default) rather than spin.
static BLOCKING_WAITS: AtomicBool = AtomicBool::new(true);

/// How host threads wait for the GPUs opened after this call: `true` (the default) sleeps on
/// the driver's synchronisation primitive (`CU_CTX_SCHED_BLOCKING_SYNC`, and waited-on events
/// created `CU_EVENT_BLOCKING_SYNC`), so a thread waiting for a partition's kernels leaves its
/// core to synthesis; `false` leaves the driver's choice, which spins while the process has
/// fewer contexts than cores. Process-wide, as the primary context it sets is.
pub fn set_blocking_waits(on: bool) {
    BLOCKING_WAITS.store(on, Ordering::Relaxed);
}

/// The flags of an event a host thread will wait on.
pub fn wait_event_flags() -> dsys::CUevent_flags {
    if BLOCKING_WAITS.load(Ordering::Relaxed) {
        dsys::CUevent_flags::CU_EVENT_BLOCKING_SYNC
    } else {
        dsys::CUevent_flags::CU_EVENT_DEFAULT
    }
}

/// Checks, without panicking, that the driver library, a GPU and NVRTC are all present.
/// `Err` names the missing piece.
pub fn probe() -> std::result::Result<(), String> {
    // SAFETY: only probes for the shared library; nothing is called when it is absent.
    if !unsafe { dsys::is_culib_present() } {
        return Err("no NVIDIA driver: libcuda is not on the loader path".into());
    }
    match CudaContext::device_count() {
        Ok(0) => return Err("the NVIDIA driver reports no CUDA GPU".into()),
        Ok(_) => {}
        Err(e) => {
            return Err(format!(
                "no usable CUDA GPU: cuDeviceGetCount/cuInit failed: {e:?}"
            ))
        }
    }
    nvrtc_present().map(|_| ())
}

/// `resident_threads` answers, by (kernel, block size).
type ResidentThreads = HashMap<(String, u32), Option<u64>>;

/// One GPU with its context, its stream, and every kernel module loaded.
pub struct GpuDevice {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub ordinal: usize,
    pub name: String,
    pub cc: (i32, i32),
    pub sm_count: u32,
    /// What each module's compile did (or that it came from the cache).
    pub compiled: Vec<Compiled>,
    funcs: HashMap<&'static str, CudaFunction>,
    /// An event the GPU passed at a known host instant: device events are placed on the host
    /// clock from it (`host_time`), whenever their results are read.
    epoch: Arc<(std::time::Instant, cudarc::driver::CudaEvent)>,
    /// `resident_threads` answers by (kernel, block size), shared by the forks of this GPU: the
    /// MSM planner asks for every MSM.
    resident: Arc<std::sync::Mutex<ResidentThreads>>,
}

const KERNELS: &[(Module, &[&str])] = &[
    (
        Module::Arith,
        &[
            "arith_fr",
            "arith_fp",
            "arith_fp2",
            "mul_chains_fr_x1",
            "mul_chains_fr_x4",
            "mul_chains_fp_x1",
            "mul_chains_fp_x4",
            "mul_chains_fr52_x1",
            "mul_chains_fr52_x4",
            "mul_chains_frmix_x4",
        ],
    ),
    (Module::Ntt, &["ntt_pass", "ntt_pass_v2", "ntt_twiddles"]),
    (
        Module::H,
        &["scale_permute", "h_product", "h_finish", "bitrev_copy"],
    ),
    (
        Module::Msm,
        &[
            "msm_histogram",
            "msm_tile_sums",
            "msm_scan",
            "msm_tile_scan",
            "msm_scatter",
            "msm_scatter_coarse",
            "msm_scatter_fine",
            "msm_accumulate_g1",
            "msm_accumulate_g1_lockstep",
            "msm_accumulate_g2",
            "msm_fold_heads_g1",
            "msm_fold_heads_g2",
            "msm_fixup_g1",
            "msm_fixup_g2",
            "msm_bucket_reduce_g1",
            "msm_bucket_reduce_g2",
            "msm_reduce_pairs_g1",
            "msm_reduce_pairs_g2",
        ],
    ),
    (
        Module::BatchAdd,
        &[
            "batch_add_g1",
            "batch_add_g2",
            "reduce_sum_g1",
            "reduce_sum_g2",
        ],
    ),
    (
        Module::Spmv,
        &[
            "spmv_rows",
            "spmv_unsatisfied",
            "split_gather",
            "unpack_witness",
        ],
    ),
    (Module::FixedBase, &["fixed_base_g1", "fixed_base_g2"]),
];

impl GpuDevice {
    /// Opens GPU `ordinal`, compiles (or loads from the cache) every module for its exact
    /// architecture and loads all kernels.
    pub fn open(ordinal: usize) -> Result<Self> {
        probe().map_err(backend_err)?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| backend_err(format!("cuCtxCreate on GPU {ordinal}: {e:?}")))?;
        if BLOCKING_WAITS.load(Ordering::Relaxed) {
            if let Err(e) = ctx.set_blocking_synchronize() {
                // Only a cost: waiting threads then spin.
                log::warn!("GPU {ordinal}: blocking synchronisation not set ({e:?}); waits spin");
            }
        }
        let name = ctx
            .name()
            .map_err(|e| backend_err(format!("device name of GPU {ordinal}: {e:?}")))?;
        let cc = ctx
            .compute_capability()
            .map_err(|e| backend_err(format!("compute capability of GPU {ordinal}: {e:?}")))?;
        let sm_count = ctx
            .attribute(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| backend_err(format!("SM count of GPU {ordinal}: {e:?}")))?
            as u32;
        let stream = ctx
            .new_stream()
            .map_err(|e| backend_err(format!("stream on GPU {ordinal}: {e:?}")))?;
        if let Err(e) = super::pool::keep(&ctx) {
            // Only a cost: freed memory then goes back to the driver at every synchronisation.
            log::warn!("{e}; the memory pool will release freed memory at each synchronisation");
        }
        let epoch = {
            let ev = ctx
                .new_event(Some(dsys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| {
                    backend_err(format!("creating the clock event on GPU {ordinal}: {e:?}"))
                })?;
            ev.record(&stream).map_err(|e| {
                backend_err(format!("recording the clock event on GPU {ordinal}: {e:?}"))
            })?;
            ev.synchronize().map_err(|e| {
                backend_err(format!(
                    "waiting for the clock event on GPU {ordinal}: {e:?}"
                ))
            })?;
            Arc::new((std::time::Instant::now(), ev))
        };
        let verbose = std::env::var_os("CUZK_GPU_VERBOSE").is_some();
        let mut funcs = HashMap::new();
        let mut compiled = Vec::new();
        let modules: Vec<Module> = KERNELS.iter().map(|(m, _)| *m).collect();
        for ((module, names), c) in KERNELS.iter().zip(compile_all(&modules, cc, true)) {
            let c = c.map_err(backend_err)?;
            if !c.from_cache {
                log::info!(
                    "NVRTC compiled module {} for {} in {:.1} s",
                    module.name(),
                    c.arch,
                    c.compile_secs
                );
                if verbose {
                    log::info!("{}", c.log);
                }
            }
            let m = ctx
                .load_module(Ptx::from_binary(c.cubin.clone()))
                .map_err(|e| {
                    backend_err(format!(
                        "loading module {} ({}): {e:?}",
                        module.name(),
                        c.arch
                    ))
                })?;
            for n in names.iter() {
                let f = m.load_function(n).map_err(|e| {
                    backend_err(format!("kernel {n} in module {}: {e:?}", module.name()))
                })?;
                funcs.insert(*n, f);
            }
            compiled.push(c);
        }
        Ok(GpuDevice {
            ctx,
            stream,
            ordinal,
            name,
            cc,
            sm_count,
            compiled,
            funcs,
            epoch,
            resident: Default::default(),
        })
    }

    /// Another handle on this GPU (same context, kernels and memory pool) with a stream of its own:
    /// a compute worker's, so that two workers' kernels may run side by side.
    pub fn fork(&self) -> Result<GpuDevice> {
        let stream = self
            .ctx
            .new_stream()
            .map_err(|e| backend_err(format!("worker stream on GPU {}: {e:?}", self.ordinal)))?;
        Ok(GpuDevice {
            ctx: self.ctx.clone(),
            stream,
            ordinal: self.ordinal,
            name: self.name.clone(),
            cc: self.cc,
            sm_count: self.sm_count,
            compiled: Vec::new(),
            funcs: self.funcs.clone(),
            epoch: self.epoch.clone(),
            resident: self.resident.clone(),
        })
    }

    /// When the GPU passed `ev` (recorded on any stream of this GPU, and complete), on the host
    /// clock: the clock event's host instant plus the device time between the two.
    pub fn host_time(&self, ev: &cudarc::driver::CudaEvent) -> Result<std::time::Instant> {
        let (at, clock) = &*self.epoch;
        let ms = clock
            .elapsed_ms(ev)
            .map_err(|e| backend_err(format!("event timing on GPU {}: {e:?}", self.ordinal)))?;
        Ok(*at + std::time::Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }

    /// A timing event recorded now on this device's stream (a host thread may wait on it).
    pub fn mark(&self) -> Result<cudarc::driver::CudaEvent> {
        let ev = self.ctx.new_event(Some(wait_event_flags())).map_err(|e| {
            backend_err(format!("creating an event on GPU {}: {e:?}", self.ordinal))
        })?;
        ev.record(&self.stream).map_err(|e| {
            backend_err(format!("recording an event on GPU {}: {e:?}", self.ordinal))
        })?;
        Ok(ev)
    }

    pub fn func(&self, name: &str) -> Result<&CudaFunction> {
        self.funcs
            .get(name)
            .ok_or_else(|| backend_err(format!("kernel {name} is not loaded")))
    }

    /// Threads of kernel `name` resident on the whole GPU at once with blocks of `block` threads
    /// and no dynamic shared memory (the driver's occupancy × SMs × block); None if the driver
    /// cannot say.
    pub fn resident_threads(&self, name: &str, block: u32) -> Option<u64> {
        let key = (name.to_string(), block);
        if let Some(&known) = self
            .resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return known;
        }
        let answer = self
            .func(name)
            .ok()
            .and_then(|f| {
                f.occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
                    .ok()
            })
            .map(|blocks| blocks as u64 * self.sm_count as u64 * block as u64);
        self.resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, answer);
        answer
    }

    /// The most threads a block of kernel `name` may have (its `__launch_bounds__`), from the
    /// driver; None if it cannot say.
    pub fn max_block_threads(&self, name: &str) -> Option<u32> {
        let f = self.func(name).ok()?;
        let v = f.get_attribute(cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK).ok()?;
        u32::try_from(v).ok().filter(|&t| t > 0)
    }

    /// Registers per thread and local-memory (spill) bytes of a kernel, from the driver.
    pub fn kernel_resources(&self, name: &str) -> Result<(i32, i32)> {
        let f = self.func(name)?;
        let regs = f
            .num_regs()
            .map_err(|e| backend_err(format!("registers of {name}: {e:?}")))?;
        let local = f
            .local_size_bytes()
            .map_err(|e| backend_err(format!("local size of {name}: {e:?}")))?;
        Ok((regs, local))
    }

    pub fn sync(&self, what: &str) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| backend_err(format!("{what}: {e:?}")))
    }
}

/// A 1-D launch configuration covering `n` threads with blocks of `block` threads.
pub fn grid(n: u64, block: u32) -> LaunchConfig {
    let blocks = n.div_ceil(block as u64).max(1);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Launches kernel `name` with `cfg`; the arguments are references to the kernel's parameters
/// in order (device addresses as `u64`, sizes as `u32`/`u64`).
#[macro_export]
#[doc(hidden)]
macro_rules! gpu_launch {
    (@push $b:ident;) => {};
    (@push $b:ident; $a:expr $(, $rest:expr)*) => {
        let v = $a;
        cudarc::driver::PushKernelArg::arg(&mut $b, v);
        $crate::gpu_launch!(@push $b; $($rest),*);
    };
    ($dev:expr, $name:expr, $cfg:expr, $($arg:expr),* $(,)?) => {{
        let f = $dev.func($name)?;
        let mut b = $dev.stream.launch_builder(f);
        $crate::gpu_launch!(@push b; $($arg),*);
        // SAFETY: the argument list matches the kernel's signature in cuda-src/.
        unsafe { b.launch($cfg) }
            .map(|_| ())
            .map_err(|e| $crate::gpu::backend_err(format!("launching {}: {e:?}", $name)))
    }};
}
