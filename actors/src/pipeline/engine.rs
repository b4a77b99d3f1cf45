//! The engine service: starts the actors on an actix system in a thread of its own and gives the
//! embedding process a plain, thread-safe handle (submit, await/poll/cancel, status, SRS preload
//! and evict, pause, shutdown).
//!
//! [`Engine::start`] takes one backend per device; [`Engine::start_on`] the devices
//! `resources::devices` opened (the daemon's `Engine::from_settings` opens them from its
//! settings). [`Engine::evict_srs_freed`] also drops the parameters' residency on every GPU
//! where nothing is staged and says what was freed ([`Evicted`]); [`Engine::install_srs`] puts a set built in memory where its
//! file would be. [`Engine::shutdown`] answers every live job, waits for the running stages, and
//! has each UploadActor unpin its staging buffers before the actors stop.
//!
//! Every call that can fail returns an [`EngineError`]: `Start` when the actors cannot start,
//! `Srs` (naming the file) when parameters cannot be loaded, installed or evicted, `Busy` or
//! `Stopped` when the actors cannot take or answer a request.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix::prelude::*;
use cuzk_engine::Pipeline;
use cuzk_srs::{OpenOptions, Srs};

use crate::pipeline::collector::MsmCollector;
use crate::pipeline::compute::{ComputeActor, ComputeQueue};
use crate::pipeline::dispatcher::{DeadlinesMissed, Dispatcher, DispatcherConfig, JobsUsing};
use crate::pipeline::job::{JobHandle, JobId, JobSpec};
use crate::pipeline::messages::{
    Cancel, Evict, EvictIdle, EvictResident, GetStatus, Install, List, Load, SetPaused,
    SetUploaders, Shutdown, StageReports, Submit, UnpinStaging,
};
use crate::pipeline::srs_loader::{Handles, LoadedSrs, SrsLoader};
use crate::pipeline::status::Status;
use crate::pipeline::timeline::Timeline;
use crate::pipeline::turns::Turns;
use crate::pipeline::upload::UploadActor;
use crate::resources::devices::Devices;
use crate::resources::pinner::{HostPinner, PinApi};
use crate::EngineError;

/// How the pipeline is shaped.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Compute workers per GPU (each its own thread; they share the GPU's kernel mutex).
    pub gpu_workers_per_device: usize,
    /// Device-memory budget per GPU in bytes (free memory after a pool trim, minus the reserve).
    pub vram_budget: Vec<u64>,
    /// Host bytes that synthesized partitions may hold before synthesis waits.
    pub host_budget: u64,
    /// The backends keep the SRS resident on each device: the dispatcher reserves its bases and
    /// one MSM's scratch per GPU (swapped only when the GPU is idle), partitions only their own
    /// buffers.
    pub srs_resident: bool,
    pub synth_threads: usize,
    /// Pinning granularity: large ranges are registered in chunks of this many bytes.
    pub pin_chunk: usize,
    pub self_verify: bool,
    pub srs_open: OpenOptions,
    /// SRS handles idle this long (and held by no job) are evicted.
    pub srs_idle_evict: Duration,
    /// A device with this many consecutive device-side failures is taken out of service (while
    /// another is in service) and its work goes to the others; 0: never. While more than one
    /// device is in service, a dispatched partition's prepared inputs are kept on the host (under
    /// its host reservation) so that one failing on a device is retried on another.
    pub device_fail_limit: u32,
    /// Device bytes kept free for the driver and other processes. Before each VRAM reservation
    /// the dispatcher reads the device's memory (`Pipeline::memory`): while other processes hold
    /// more than they did at the start, the budget admits only what they leave less this.
    pub vram_reserve: u64,
    /// The machine's memory, read before each partition's synthesis starts (`HostMemory::system`
    /// by default; `unchecked` leaves only `host_budget`).
    pub host_memory: crate::resources::host_memory::HostMemory,
    /// Host bytes kept free for the rest of the process and the system.
    pub host_reserve: u64,
    /// The timeline keeps this many of the most recent spans (`timeline::MAX_SPANS` by default).
    pub timeline_spans: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            gpu_workers_per_device: 1,
            vram_budget: vec![crate::resources::budget::UNLIMITED],
            host_budget: crate::resources::budget::UNLIMITED,
            srs_resident: false,
            synth_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            pin_chunk: 256 << 20,
            self_verify: true,
            srs_open: OpenOptions::default(),
            srs_idle_evict: Duration::from_secs(600),
            device_fail_limit: 3,
            vram_reserve: 512 << 20,
            host_memory: crate::resources::host_memory::HostMemory::system(),
            host_reserve: 4 << 30,
            timeline_spans: crate::pipeline::timeline::MAX_SPANS,
        }
    }
}

/// What [`Engine::evict_srs_freed`] freed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evicted {
    /// The parameters' points in host memory (or mapped from the decode cache).
    pub host_bytes: u64,
    /// The GPUs whose resident copy was dropped.
    pub gpus: Vec<GpuFreed>,
}

/// One GPU's resident copy of evicted parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFreed {
    pub gpu: usize,
    /// The VRAM reservation given back (bases and the workers' MSM scratch).
    pub reserved: u64,
    /// The device bytes the backend freed (0 for a backend that keeps nothing resident).
    pub device_bytes: u64,
}

impl Evicted {
    /// Host bytes plus the VRAM reservations given back.
    pub fn total(&self) -> u64 {
        self.host_bytes + self.gpus.iter().map(|g| g.reserved).sum::<u64>()
    }
}

/// How long [`Engine::shutdown`] waits for running stages to end.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(120);

pub struct Engine {
    dispatcher: Addr<Dispatcher>,
    pinner: Addr<HostPinner>,
    loader: Addr<SrsLoader>,
    system: actix_rt::System,
    thread: Mutex<Option<JoinHandle<()>>>,
    timeline: Timeline,
    /// Jobs that ended after their deadline, by kind (the dispatcher counts them).
    deadlines_missed: DeadlinesMissed,
    /// One name per device (`start_on`: the GPU's name, or `cpu`).
    device_names: Vec<String>,
}

struct Started {
    dispatcher: Addr<Dispatcher>,
    pinner: Addr<HostPinner>,
    loader: Addr<SrsLoader>,
    system: actix_rt::System,
}

impl Engine {
    /// Starts the pipeline over `backends` (one per GPU; a CPU backend counts as one device).
    pub fn start(
        cfg: EngineConfig,
        backends: Vec<Arc<dyn Pipeline>>,
        pin_api: Box<dyn PinApi>,
    ) -> Result<Engine, EngineError> {
        Engine::start_planned(cfg, backends, pin_api, crate::fault::Faults::default())
    }

    /// [`Engine::start`] with a fault plan the actors consult at every stage (tests; wrap the
    /// backends in `fault::backend::Faulty` for the sites inside backend calls).
    #[cfg(feature = "faults")]
    pub fn start_with_faults(
        cfg: EngineConfig,
        backends: Vec<Arc<dyn Pipeline>>,
        pin_api: Box<dyn PinApi>,
        faults: crate::fault::Faults,
    ) -> Result<Engine, EngineError> {
        Engine::start_planned(cfg, backends, pin_api, faults)
    }

    fn start_planned(
        cfg: EngineConfig,
        backends: Vec<Arc<dyn Pipeline>>,
        pin_api: Box<dyn PinApi>,
        faults: crate::fault::Faults,
    ) -> Result<Engine, EngineError> {
        if backends.is_empty() || backends.len() != cfg.vram_budget.len() {
            return Err(EngineError::Start(format!(
                "{} backends but {} VRAM budgets",
                backends.len(),
                cfg.vram_budget.len()
            )));
        }
        // The engine's diagnostics (`log` facade) into the slog logger, unless the embedding
        // program routes `log` itself.
        crate::log::bridge();
        let timeline = Timeline::keeping(cfg.timeline_spans);
        let device_names = (0..backends.len()).map(|i| format!("device {i}")).collect();
        let (tx, rx) = crossbeam_channel::bounded::<Result<Started, String>>(1);
        let tl = timeline.clone();
        let deadlines_missed = DeadlinesMissed::default();
        let missed = deadlines_missed.clone();
        let thread = std::thread::Builder::new()
            .name("cuzk-actors".into())
            .spawn(move || {
                let sys = actix_rt::System::new();
                let started = sys.block_on(async move {
                    let dcfg = DispatcherConfig {
                        vram_capacity: cfg.vram_budget.clone(),
                        host_capacity: cfg.host_budget,
                        srs_resident: cfg.srs_resident,
                        synth_threads: cfg.synth_threads,
                        workers_per_gpu: cfg.gpu_workers_per_device.max(1),
                        faults: faults.clone(),
                        device_fail_limit: cfg.device_fail_limit,
                        devices: backends.clone(),
                        vram_reserve: cfg.vram_reserve,
                        host_memory: cfg.host_memory.clone(),
                        host_reserve: cfg.host_reserve,
                        deadlines_missed: missed,
                    };
                    let dispatcher = Dispatcher::new(dcfg, tl.clone())?.start();
                    // Whole multiples of the copy piece, so that no copy piece spans two registrations.
                    let piece = cuzk_engine::pipeline::COPY_PIECE;
                    let chunk = cfg.pin_chunk.div_ceil(piece).max(1) * piece;
                    // The factory is `Fn`; the one pinner thread takes the API out once.
                    let api = Mutex::new(Some(pin_api));
                    let pinner = SyncArbiter::start(1, move || {
                        let a = api.lock().ok().and_then(|mut g| g.take());
                        HostPinner::new(
                            a.unwrap_or_else(|| {
                                Box::new(crate::resources::pinner::CountingPin::default())
                            }),
                            chunk,
                        )
                    });
                    let opts = cfg.srs_open.clone();
                    let loader = SyncArbiter::start(1, move || SrsLoader::new(opts.clone()));
                    // What the stages report to the dispatcher, as recipients of those messages.
                    let reports = StageReports {
                        compute_done: dispatcher.clone().recipient(),
                        dropped: dispatcher.clone().recipient(),
                        partition_done: dispatcher.clone().recipient(),
                    };
                    let upload_done = dispatcher.clone().recipient();
                    let mut uploaders = Vec::new();
                    for (gpu, backend) in backends.into_iter().enumerate() {
                        let (b, d, t) = (backend.clone(), reports.clone(), tl.clone());
                        let verify = cfg.self_verify;
                        let f = faults.clone();
                        let collector = SyncArbiter::start(1, move || MsmCollector {
                            faults: f.clone(),
                            ..MsmCollector::new(gpu, b.clone(), verify, d.clone(), t.clone())
                        });
                        let turns = Arc::new(Turns::default());
                        // Staged partitions wait here for a compute worker, highest priority first.
                        let queue = Arc::new(ComputeQueue::default());
                        let q = queue.clone();
                        let next_worker = Arc::new(AtomicUsize::new(0));
                        let (b, d, t) = (backend.clone(), reports.clone(), tl.clone());
                        let compute =
                            SyncArbiter::start(cfg.gpu_workers_per_device.max(1), move || {
                                ComputeActor {
                                    gpu,
                                    worker: next_worker.fetch_add(1, Ordering::Relaxed),
                                    backend: b.clone(),
                                    turns: turns.clone(),
                                    queue: q.clone(),
                                    collector: collector.clone(),
                                    reports: d.clone(),
                                    timeline: t.clone(),
                                }
                            });
                        let (b, d, u, t, p, f) = (
                            backend.clone(),
                            reports.clone(),
                            upload_done.clone(),
                            tl.clone(),
                            pinner.clone(),
                            faults.clone(),
                        );
                        uploaders.push(SyncArbiter::start(1, move || UploadActor {
                            gpu,
                            backend: b.clone(),
                            pinner: p.clone(),
                            compute: compute.clone(),
                            upload_done: u.clone(),
                            reports: d.clone(),
                            timeline: t.clone(),
                            queue: queue.clone(),
                            staging: None,
                            srs_pin: crate::pipeline::held_pin::HeldPin::new(
                                "the SRS's host bases",
                            ),
                            recording_pin: crate::pipeline::held_pin::HeldPin::new(
                                "the recording's matrices",
                            ),
                            faults: f.clone(),
                        }));
                    }
                    dispatcher.do_send(SetUploaders(uploaders));
                    let l = loader.clone();
                    let d = dispatcher.clone();
                    let idle = cfg.srs_idle_evict;
                    actix_rt::spawn(async move {
                        loop {
                            actix_rt::time::sleep(idle.max(Duration::from_secs(1)) / 2).await;
                            l.do_send(EvictIdle { idle, reply: None });
                            // Resident copies of parameters no handle holds any more (evicted
                            // idle on an earlier round) are dropped on idle GPUs.
                            d.do_send(EvictResident {
                                srs: None,
                                reply: None,
                            });
                        }
                    });
                    Ok::<_, String>(Started {
                        dispatcher,
                        pinner,
                        loader,
                        system: actix_rt::System::current(),
                    })
                });
                let ok = started.is_ok();
                let _ = tx.send(started);
                if ok {
                    let _ = sys.run();
                }
            })
            .map_err(|e| EngineError::Start(format!("starting the actor thread: {e}")))?;
        let s = rx
            .recv()
            .map_err(|_| EngineError::Start("the actor system failed to start".into()))?
            .map_err(EngineError::Start)?;
        Ok(Engine {
            dispatcher: s.dispatcher,
            pinner: s.pinner,
            loader: s.loader,
            system: s.system,
            thread: Mutex::new(Some(thread)),
            timeline,
            deadlines_missed,
            device_names,
        })
    }

    /// Starts the pipeline on devices [`open_on`](crate::resources::devices::open_on) opened, under `cfg` (whose VRAM
    /// budgets are usually taken from `dev.free`): the SRS is kept resident where the devices
    /// say so, and status names each device as they do.
    pub fn start_on(mut cfg: EngineConfig, dev: Devices) -> Result<Engine, EngineError> {
        cfg.srs_resident = dev.srs_resident;
        let names = dev.names;
        let mut engine = Engine::start(cfg, dev.backends, dev.pin)?;
        engine.device_names = names;
        Ok(engine)
    }

    /// Queues `spec`; [`EngineError::Busy`] where the queue cannot take it now,
    /// [`EngineError::Stopped`] where the engine is gone. The job's own failure comes through
    /// its handle ([`JobError`](crate::JobError)). A [`JobSpec::deadline`] counts from here.
    pub fn submit(&self, spec: JobSpec) -> Result<JobHandle, EngineError> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        let (id_tx, id_rx) = crossbeam_channel::bounded(1);
        let submitted = Instant::now();
        self.dispatcher
            .try_send(Submit {
                spec,
                reply,
                id: id_tx,
            })
            .map_err(|e| {
                let why = format!("engine not accepting jobs: {e}");
                match e {
                    SendError::Full(_) => EngineError::Busy(why),
                    SendError::Closed(_) => EngineError::Stopped(why),
                }
            })?;
        let id = id_rx.recv().map_err(|_| stopped())?;
        Ok(JobHandle { id, rx, submitted })
    }

    /// Cancels a job; `false` if it had already ended or is unknown.
    pub fn cancel(&self, job: JobId) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.dispatcher.do_send(Cancel { job, reply: tx });
        rx.recv().unwrap_or(false)
    }

    pub fn status(&self) -> Result<Status, EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.dispatcher.do_send(GetStatus(tx));
        answer(&rx, "the dispatcher (status)")
    }

    pub fn set_paused(&self, paused: bool) {
        self.dispatcher.do_send(SetPaused(paused));
    }

    /// Registered pinned bytes and registrations.
    pub fn pinned(&self) -> Result<(usize, usize), EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.pinner.do_send(crate::resources::pinner::PinnedNow(tx));
        answer(&rx, "the host pinner (pinned bytes)")
    }

    /// Opens (once; then shared) the parameter file at `path`; [`EngineError::Srs`] naming it
    /// where it cannot be opened.
    pub fn load_srs(&self, path: &Path) -> Result<Arc<Srs>, EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(Load {
            path: path.into(),
            reply: tx,
        });
        rx.recv()
            .map_err(|_| stopped())?
            .map_err(|e| EngineError::srs(path, e))
    }

    /// Installs parameters built in memory under `path`, where jobs find them as if loaded
    /// from that file (`cuzk filecoin setup --into-engine`: no file, no decode cache on disk).
    pub fn install_srs(&self, path: &Path, srs: Arc<Srs>) -> Result<(), EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(Install {
            path: path.into(),
            srs,
            reply: tx,
        });
        rx.recv()
            .map_err(|_| stopped())?
            .map_err(|e| EngineError::srs(path, e))
    }

    /// Whether parameters are loaded (or installed) under `path`.
    pub fn has_srs(&self, path: &Path) -> bool {
        self.loaded_srs()
            .map(|l| l.iter().any(|s| s.path == path))
            .unwrap_or(false)
    }

    /// Evicts the parameters loaded from `path` (refused while a job uses them), and their
    /// resident copies on every GPU where nothing is staged; see [`Engine::evict_srs_freed`].
    pub fn evict_srs(&self, path: &Path) -> Result<(), EngineError> {
        self.evict_srs_freed(path).map(|_| ())
    }

    /// [`Engine::evict_srs`], saying what it freed: the loader's handle (refused while a job not
    /// yet answered uses it, naming how many), then, on every GPU where the parameters are resident and nothing is staged,
    /// their VRAM reservation (released by the dispatcher) and the device copy (freed by that
    /// GPU's UploadActor, `Pipeline::evict_resident`). Returns once the device copies are freed.
    pub fn evict_srs_freed(&self, path: &Path) -> Result<Evicted, EngineError> {
        let handle = self.srs_handles()?.into_iter().find(|(p, _)| p == path);
        if let Some((_, srs)) = handle {
            let jobs = self.jobs_using(vec![srs])?.first().copied().unwrap_or(0);
            if jobs > 0 {
                let s = if jobs == 1 { "" } else { "s" };
                return Err(EngineError::srs(
                    path,
                    format!("in use by {jobs} job{s} (queued or running); evict refused"),
                ));
            }
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(Evict {
            path: path.into(),
            reply: tx,
        });
        let srs = rx
            .recv()
            .map_err(|_| stopped())?
            .map_err(|e| EngineError::srs(path, e))?;
        let mut freed = Evicted {
            host_bytes: srs.point_bytes(),
            ..Evicted::default()
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.dispatcher.do_send(EvictResident {
            srs: Some(srs.clone()),
            reply: Some(tx),
        });
        let dropped = rx.recv().map_err(|_| stopped())?;
        for d in dropped {
            let device = d
                .freed
                .recv()
                .map_err(|_| {
                    EngineError::Stopped(format!(
                        "engine stopped while freeing the resident copy of {} on GPU {}",
                        path.display(),
                        d.gpu
                    ))
                })?
                .map_err(|e| EngineError::srs(path, e))?;
            freed.gpus.push(GpuFreed {
                gpu: d.gpu,
                reserved: d.reserved,
                device_bytes: device,
            });
        }
        drop(srs);
        Ok(freed)
    }

    /// The open parameter files, each with the jobs (queued or running) that use it.
    pub fn loaded_srs(&self) -> Result<Vec<LoadedSrs>, EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(List(tx));
        let mut list = rx.recv().map_err(|_| stopped())?;
        let handles = self.srs_handles()?;
        let counts = self.jobs_using(handles.iter().map(|(_, s)| s.clone()).collect())?;
        for l in &mut list {
            let i = handles.iter().position(|(p, _)| *p == l.path);
            l.jobs = i.and_then(|i| counts.get(i).copied()).unwrap_or(0);
        }
        Ok(list)
    }

    /// The loader's handles, by path.
    fn srs_handles(&self) -> Result<Vec<(PathBuf, Arc<Srs>)>, EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(Handles(tx));
        rx.recv().map_err(|_| stopped())
    }

    /// For each handle, the jobs not yet answered that use it.
    fn jobs_using(&self, srs: Vec<Arc<Srs>>) -> Result<Vec<usize>, EngineError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.dispatcher.do_send(JobsUsing { srs, reply: tx });
        rx.recv().map_err(|_| stopped())
    }

    pub fn evict_idle_srs(&self, idle: Duration) -> Vec<PathBuf> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.loader.do_send(EvictIdle {
            idle,
            reply: Some(tx),
        });
        rx.recv().unwrap_or_default()
    }

    /// The devices' names, by ordinal.
    pub fn device_names(&self) -> &[String] {
        &self.device_names
    }

    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// How many jobs ended after their deadline ([`JobSpec::deadline`]), by kind, since the
    /// engine started (kinds that never missed one are absent).
    pub fn deadlines_missed(&self) -> Vec<(String, u64)> {
        self.deadlines_missed.by_kind()
    }

    /// Stops the actors; jobs still running end with `EngineStopped`.
    /// Stops the engine: every live job is answered (`JobError::EngineStopped`), stages already
    /// running end and release what they hold (waiting at most [`SHUTDOWN_WAIT`] for them), the
    /// staging buffers are unpinned, then the actors stop.
    pub fn shutdown(&self) {
        let Some(thread) = self.thread.lock().ok().and_then(|mut g| g.take()) else {
            return;
        };
        let l = crate::log::component("engine");
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self.dispatcher.try_send(Shutdown { reply: tx }).is_ok() {
            match rx.recv_timeout(SHUTDOWN_WAIT) {
                Ok(uploaders) => {
                    for u in uploaders {
                        let (tx, rx) = crossbeam_channel::bounded(1);
                        if u.try_send(UnpinStaging { reply: tx }).is_ok() {
                            let _ = rx.recv_timeout(Duration::from_secs(10));
                        }
                    }
                    // The pinner answers after the unpins the uploaders asked for.
                    let _ = self.pinned();
                }
                Err(_) => slog::warn!(
                    l,
                    "shutdown: stages still running after {:?}; stopping without them",
                    SHUTDOWN_WAIT
                ),
            }
        }
        self.system.stop();
        let _ = thread.join();
        slog::info!(l, "engine stopped");
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How long a status query waits for an actor before it reports the actor as unresponsive.
const QUERY_WAIT: Duration = Duration::from_secs(30);

/// An actor's answer to a query, or an error naming the actor (stopped, or busy past
/// [`QUERY_WAIT`]), so a caller polling status never blocks for ever.
fn answer<T>(rx: &crossbeam_channel::Receiver<T>, who: &str) -> Result<T, EngineError> {
    rx.recv_timeout(QUERY_WAIT).map_err(|e| match e {
        crossbeam_channel::RecvTimeoutError::Timeout => EngineError::Stopped(format!(
            "{who} did not answer within {} s",
            QUERY_WAIT.as_secs()
        )),
        crossbeam_channel::RecvTimeoutError::Disconnected => stopped(),
    })
}

/// An actor's answer lost: the engine stopped.
fn stopped() -> EngineError {
    EngineError::Stopped("engine stopped".into())
}
