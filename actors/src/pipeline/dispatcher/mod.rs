//! The dispatcher: owns the job table, the queues and both budgets (VRAM per GPU, host memory).
//!
//! - Synthesis: a submitted job's partitions queue for synthesis; each starts when its host-memory
//!   reservation fits the budget and the machine's available memory (less what partitions
//!   already synthesizing will still take) — back-pressure to synthesis — and runs on the
//!   synthesis pool. The first partition of a shape with no recording records it alone; the
//!   others of that shape wait for it and then synthesize witness-only.
//! - Dispatch: a synthesized partition waits in the ready queue, ordered by priority class, then
//!   job age, then partition index. The head goes to a GPU whose uploader is idle once its device
//!   reservation fits (a partition too large for the whole budget takes the chunked tier).
//! - Reservations are released as stages end (host after upload, device after compute) or when a
//!   cancelled partition is dropped; a job's result is assembled in partition order.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use crossbeam_channel::Sender;
use cuzk_engine::prover::{prepare, ProveOptions};
use cuzk_engine::synth::Shape;
use ff::Field;

use crate::pipeline::job::{
    JobError, JobId, JobOutput, JobSpec, Priority, Randomness, SynthFn, Synthesis, SynthesisProbe,
};
use crate::pipeline::messages::{
    Cancel, ComputeDone, DropResident, Dropped, EvictResident, GetStatus, PartitionDone,
    ResidentDropped, SetPaused, SetUploaders, Shutdown, Submit, Synthesized, Upload, UploadDone,
};
use crate::pipeline::status::{BudgetStatus, JobInfo, Status};
use crate::pipeline::synth_workers::SynthWorkers;
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::upload::UploadActor;
use crate::pipeline::work::{PartKey, Ticket};
use crate::resources::budget::{Budget, ReservationId};
use crate::resources::host_memory::HostMemory;
use crate::resources::tier::{choose, Dims, Tier};

type Order = (Reverse<Priority>, JobId, usize);

/// How many recent dispatches `Status` reports (a long-running daemon must not grow without end).
const DISPATCH_LOG: usize = 4096;

/// How often a partition waiting for memory other processes hold looks again.
const MEMORY_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// A VRAM limit move smaller than this is applied without a log line.
const LIMIT_LOG_STEP: u64 = 256 << 20;

struct InFlight {
    host: Option<ReservationId>,
    vram: Option<(usize, ReservationId)>,
    /// The device it was dispatched to.
    gpu: Option<usize>,
    /// A copy of the prepared partition, kept (with its host reservation) while another device
    /// is in service, so a device-side failure retries it there instead of failing the job.
    copy: Option<cuzk_engine::prover::Prepared>,
    /// Devices it failed on.
    failed_on: Vec<usize>,
}

struct JobState {
    spec_srs: Arc<cuzk_srs::Srs>,
    synthesis: SynthesisProbe,
    kind: Arc<str>,
    priority: Priority,
    synths: Vec<Option<SynthFn>>,
    rs: Vec<(Scalar, Scalar)>,
    done: Vec<Option<(Proof<Bls12>, Vec<Scalar>)>>,
    remaining: usize,
    cancelled: Arc<AtomicBool>,
    reply: Option<Sender<Result<JobOutput, JobError>>>,
    submitted: Instant,
    first_upload: Option<Instant>,
    in_flight: HashMap<usize, InFlight>,
    /// Synthesized partitions waiting for dispatch.
    ready: HashMap<usize, (cuzk_engine::prover::Prepared, Instant)>,
}

pub struct DispatcherConfig {
    pub vram_capacity: Vec<u64>,
    pub host_capacity: u64,
    pub srs_resident: bool,
    pub synth_threads: usize,
    pub workers_per_gpu: usize,
    /// The fault plan (tests; inert without the `faults` feature).
    pub faults: crate::fault::Faults,
    /// A device with this many consecutive device-side failures is taken out of service while
    /// another device is in service (0: never).
    pub device_fail_limit: u32,
    /// The devices, read for their memory before each VRAM reservation (`Backend::memory`), so
    /// memory other processes take after the start shrinks what is admitted.
    pub devices: Vec<Arc<dyn cuzk_engine::Backend>>,
    /// Device bytes kept free for the driver and other processes.
    pub vram_reserve: u64,
    /// The machine's memory, read before each partition's synthesis starts.
    pub host_memory: HostMemory,
    /// Host bytes kept free for the rest of the process and the system.
    pub host_reserve: u64,
}

pub struct Dispatcher {
    uploaders: Vec<Addr<UploadActor>>,
    uploading: Vec<bool>,
    /// Partitions dispatched to each GPU whose compute has not ended.
    staged: Vec<usize>,
    /// Which they are (for status).
    on_gpu: Vec<Vec<PartKey>>,
    /// With `srs_resident`: the SRS whose bases each GPU holds, and their reservation.
    resident: Vec<Option<(std::sync::Weak<cuzk_srs::Srs>, ReservationId, u64)>>,
    /// How many may be: one per worker, plus one being uploaded ahead. The rest wait here, in
    /// order, so the next partition is chosen when a slot frees, not when it was synthesized.
    depth: usize,
    vram: Vec<Budget>,
    host: Budget,
    srs_resident: bool,
    jobs: HashMap<JobId, JobState>,
    next_job: JobId,
    synth_queue: BTreeSet<Order>,
    ready: BTreeSet<Order>,
    synth: SynthWorkers,
    timeline: Timeline,
    /// The last partitions handed to uploaders, in order (at most `DISPATCH_LOG` of them).
    dispatch_log: std::collections::VecDeque<PartKey>,
    paused: bool,
    faults: crate::fault::Faults,
    /// Per device: consecutive device-side failures, and why it is out of service (if it is).
    failures: Vec<u32>,
    out_of_service: Vec<Option<String>>,
    fail_limit: u32,
    devices: Vec<Arc<dyn cuzk_engine::Backend>>,
    vram_reserve: u64,
    /// A partition waits for memory other processes hold: pump again soon (no release of ours
    /// will say when theirs is freed).
    memory_wait: bool,
    memory_poll_armed: bool,
    host_memory: HostMemory,
    host_reserve: u64,
    /// Partitions synthesizing now, with the host bytes they were admitted for (memory they will
    /// still allocate, so the available memory read later is short of it).
    synthesizing: HashMap<PartKey, u64>,
    /// Which of them records its circuit type's shape (its key).
    recording: HashMap<PartKey, &'static str>,
    /// Synthesis waits for host memory (logged once per wait).
    host_waiting: bool,
    /// Shutting down: new jobs refused; the reply goes out once nothing is in flight.
    stopping: Option<Option<Sender<Vec<Addr<UploadActor>>>>>,
}

impl Dispatcher {
    pub fn new(cfg: DispatcherConfig, timeline: Timeline) -> Result<Self, String> {
        let synth = SynthWorkers::new(cfg.synth_threads.max(1))?;
        Ok(Dispatcher {
            uploaders: Vec::new(),
            uploading: vec![false; cfg.vram_capacity.len()],
            staged: vec![0; cfg.vram_capacity.len()],
            on_gpu: vec![Vec::new(); cfg.vram_capacity.len()],
            resident: vec![None; cfg.vram_capacity.len()],
            depth: cfg.workers_per_gpu + 1,
            vram: cfg
                .vram_capacity
                .iter()
                .enumerate()
                .map(|(i, c)| Budget::new(format!("vram{i}"), *c))
                .collect(),
            host: Budget::new("host", cfg.host_capacity),
            srs_resident: cfg.srs_resident,
            jobs: HashMap::new(),
            next_job: 1,
            synth_queue: BTreeSet::new(),
            ready: BTreeSet::new(),
            synth,
            timeline,
            dispatch_log: std::collections::VecDeque::new(),
            paused: false,
            faults: cfg.faults,
            failures: vec![0; cfg.vram_capacity.len()],
            out_of_service: vec![None; cfg.vram_capacity.len()],
            fail_limit: cfg.device_fail_limit,
            devices: cfg.devices,
            vram_reserve: cfg.vram_reserve,
            memory_wait: false,
            memory_poll_armed: false,
            host_memory: cfg.host_memory,
            host_reserve: cfg.host_reserve,
            synthesizing: HashMap::new(),
            recording: HashMap::new(),
            host_waiting: false,
            stopping: None,
        })
    }

    fn fail(&mut self, job: JobId, err: JobError) {
        if let Some(st) = self.jobs.get(&job) {
            let partition = match &err {
                JobError::Failed { partition, .. } => Some(*partition),
                _ => None,
            };
            let l = crate::log::job(job, partition, &st.kind, None);
            match &err {
                JobError::Cancelled(_) => slog::info!(
                    l,
                    "job cancelled: its queued partitions dropped, reservations released"
                ),
                e => slog::warn!(l, "{}", e),
            }
        }
        if let Some(st) = self.jobs.get_mut(&job) {
            st.cancelled.store(true, Ordering::Release);
            if let Some(reply) = st.reply.take() {
                let _ = reply.send(Err(err));
            }
        }
        self.purge_queued(job);
    }

    /// Drops a dead job's queued partitions and releases what they hold.
    fn purge_queued(&mut self, job: JobId) {
        self.synth_queue.retain(|o| o.1 != job);
        let gone: Vec<Order> = self.ready.iter().filter(|o| o.1 == job).copied().collect();
        for o in gone {
            self.ready.remove(&o);
            self.release_all(PartKey {
                job,
                partition: o.2,
            });
        }
        if let Some(st) = self.jobs.get_mut(&job) {
            st.ready.clear();
            st.synths.iter_mut().for_each(|s| *s = None);
        }
        self.forget_if_idle(job);
    }

    fn release_all(&mut self, key: PartKey) {
        let Some(st) = self.jobs.get_mut(&key.job) else {
            return;
        };
        if let Some(f) = st.in_flight.remove(&key.partition) {
            if let Some(h) = f.host {
                self.host.release(h);
            }
            if let Some((gpu, v)) = f.vram {
                self.vram[gpu].release(v);
            }
        }
    }

    fn forget_if_idle(&mut self, job: JobId) {
        let idle = self
            .jobs
            .get(&job)
            .is_some_and(|st| st.reply.is_none() && st.in_flight.is_empty());
        if idle {
            self.jobs.remove(&job);
        }
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.stopping.is_some() {
            let idle = self.jobs.values().all(|j| j.in_flight.is_empty())
                && self.staged.iter().all(|n| *n == 0)
                && !self.uploading.iter().any(|u| *u);
            if idle {
                if let Some(reply) = self.stopping.as_mut().and_then(Option::take) {
                    let _ = reply.send(self.uploaders.clone());
                }
            }
            return;
        }
        let host_wait = self.start_synthesis(ctx);
        self.memory_wait = false;
        if !self.paused {
            self.dispatch();
        }
        if (self.memory_wait || host_wait) && !self.memory_poll_armed {
            self.memory_poll_armed = true;
            ctx.run_later(MEMORY_POLL, |d, ctx| {
                d.memory_poll_armed = false;
                d.pump(ctx);
            });
        }
    }

    /// Reads `gpu`'s memory and limits its budget to what other processes leave: total, less
    /// what they (and the driver) hold, less the reserve. Logs when the limit moves.
    fn refresh_vram(&mut self, gpu: usize) {
        let Some(m) = self.devices.get(gpu).and_then(|d| d.memory()) else {
            return;
        };
        let budget = &mut self.vram[gpu];
        let usable = m
            .total
            .saturating_sub(m.others())
            .saturating_sub(self.vram_reserve);
        let limit = (usable < budget.capacity()).then_some(usable);
        let moved = match (budget.limit(), limit) {
            (Some(a), Some(b)) => a.abs_diff(b) >= LIMIT_LOG_STEP,
            (a, b) => a != b,
        };
        if moved {
            let l = crate::log::component("dispatcher");
            match limit {
                Some(l_now) => {
                    slog::warn!(l, "other processes (or this engine's resident recordings) hold device memory: the VRAM budget admits less until they free it";
                    "gpu" => gpu, "others_mib" => m.others() >> 20, "free_mib" => m.free >> 20,
                    "admits_mib" => l_now >> 20, "capacity_mib" => budget.capacity() >> 20,
                    "reserved_mib" => budget.reserved() >> 20)
                }
                None => {
                    slog::info!(l, "device memory freed by other processes: the VRAM budget is back to its capacity";
                    "gpu" => gpu, "capacity_mib" => budget.capacity() >> 20)
                }
            }
        }
        budget.set_limit(limit);
    }

    /// Starts the queued partitions that may start now, in order. Returns whether one waits for
    /// host memory that only other processes (or time) can free, so the caller looks again soon.
    fn start_synthesis(&mut self, ctx: &mut Context<Self>) -> bool {
        let orders: Vec<Order> = self.synth_queue.iter().copied().collect();
        let mem = self.host_memory.read();
        let mut wait = false;
        for order in orders {
            let (_, job, partition) = order;
            let Some(st) = self.jobs.get_mut(&job) else {
                self.synth_queue.remove(&order);
                continue;
            };
            if st.synths[partition].is_none() {
                self.synth_queue.remove(&order);
                continue;
            }
            let how = (st.synthesis)();
            if let Synthesis::Unrecorded { key } = how {
                if self.recording.values().any(|k| *k == key) {
                    // Another partition records this shape: wait for it, then go witness-only.
                    continue;
                }
            }
            let dims = Dims::of(&st.spec_srs);
            let splits_on_device = self.splits_on_device(&dims);
            let need = match how {
                Synthesis::Recorded if splits_on_device => dims.host_witness(),
                Synthesis::Recorded => dims.host_recorded(),
                Synthesis::Unrecorded { .. } | Synthesis::Full => dims.host(),
            };
            if let Some(m) = mem {
                // What the machine has now, less the reserve and what partitions that already
                // started will still allocate (counted in full: some of it may be in use
                // already, which errs on the safe side).
                // The reserve is kept while we hold something; with nothing held, a partition
                // that fits what is available starts (so one always can, on any machine).
                let pending: u64 = self.synthesizing.values().sum();
                let reserve = if self.host.live() == 0 {
                    0
                } else {
                    self.host_reserve
                };
                let free = m.available.saturating_sub(reserve).saturating_sub(pending);
                if need > free {
                    if self.host.live() == 0 && need > m.total {
                        let what = format!(
                            "a partition needs {need} host bytes; the machine has {} in all",
                            m.total
                        );
                        self.fail(job, JobError::Rejected { job, what });
                        continue;
                    }
                    // Logged when nothing of ours is synthesizing (else it is the pipeline's
                    // ordinary pacing), once per wait.
                    if !self.host_waiting && pending == 0 {
                        self.host_waiting = true;
                        slog::info!(crate::log::component("dispatcher"),
                            "synthesis waits for host memory";
                            "need_mib" => need >> 20, "available_mib" => m.available >> 20,
                            "pending_mib" => pending >> 20, "reserve_mib" => self.host_reserve >> 20,
                            "partitions_held" => self.host.live());
                    }
                    wait = true;
                    break;
                }
            }
            let Some(res) = self.host.try_reserve(need) else {
                if self.host.live() == 0 {
                    let what = format!(
                        "a partition needs {need} host bytes; the host budget is {}",
                        self.host.capacity()
                    );
                    self.fail(job, JobError::Rejected { job, what });
                    continue;
                }
                break; // back-pressure: wait for a release
            };
            self.host_waiting = false;
            self.synth_queue.remove(&order);
            let Some(st) = self.jobs.get_mut(&job) else {
                self.host.release(res);
                continue;
            };
            let Some(synth) = st.synths[partition].take() else {
                self.host.release(res);
                continue;
            };
            self.synthesizing.insert(PartKey { job, partition }, need);
            if let Synthesis::Unrecorded { key } = how {
                self.recording.insert(PartKey { job, partition }, key);
            }
            st.in_flight.insert(
                partition,
                InFlight {
                    host: Some(res),
                    vram: None,
                    gpu: None,
                    copy: None,
                    failed_on: Vec::new(),
                },
            );
            let srs = st.spec_srs.clone();
            let addr = ctx.address();
            let timeline = self.timeline.clone();
            let cancelled = st.cancelled.clone();
            let faults = self.faults.clone();
            let opts = ProveOptions {
                splits_on_device,
                ..ProveOptions::default()
            };
            self.synth.spawn(move || {
                let key = PartKey { job, partition };
                if cancelled.load(Ordering::Acquire) {
                    addr.do_send(Dropped { key });
                    return;
                }
                let start = Instant::now();
                let hint = Shape {
                    constraints: srs.domain_size(),
                    inputs: srs.num_inputs(),
                    aux: srs.l().len(),
                };
                // A panic here must fail the partition: on the pool it would abort the process.
                let result = crate::fault::catch("synthesis", || {
                    faults.hit(crate::fault::Site {
                        stage: crate::fault::Stage::Synthesis,
                        key: Some(key),
                        device: None,
                    })?;
                    synth(hint)
                        .and_then(|asg| prepare(partition, asg, &srs, &opts))
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| format!("synthesis: {e}"));
                let end = Instant::now();
                timeline.record(key, "synth", Lane::default(), start, end, 0);
                addr.do_send(Synthesized {
                    key,
                    result,
                    at: end,
                });
            });
        }
        wait
    }

    /// Whether partitions of this shape leave their MSM scalar splits to the device: every
    /// device builds them from the witness it uploads, and would take such a partition whole
    /// with its whole budget (the chunked tier computes on the host, which then builds them,
    /// beyond what the partition was admitted for: logged when it happens).
    fn splits_on_device(&self, dims: &Dims) -> bool {
        let resident = if self.srs_resident {
            self.resident_need(dims)
        } else {
            0
        };
        !self.devices.is_empty()
            && self.devices.iter().zip(&self.vram).all(|(d, v)| {
                let room = v.capacity().saturating_sub(resident);
                d.splits_on_device()
                    && matches!(choose(dims, room, self.srs_resident), Some((Tier::Full, _)))
            })
    }

    /// Device bytes a resident SRS of these dims reserves on a GPU: its bases and one MSM's
    /// scratch per compute worker.
    fn resident_need(&self, dims: &Dims) -> u64 {
        dims.resident((self.depth - 1).max(1))
    }

    /// A partition's synthesis ended (or was dropped before it began).
    fn synthesis_ended(&mut self, key: PartKey) {
        self.synthesizing.remove(&key);
        self.recording.remove(&key);
    }

    /// Makes `srs` the SRS resident on `gpu`: its bases and one MSM's scratch are reserved there
    /// until another SRS takes its place, which happens only when nothing is staged on the GPU.
    /// `Some(bytes)` when resident, `None` to wait.
    fn make_resident(
        &mut self,
        gpu: usize,
        srs: &Arc<cuzk_srs::Srs>,
    ) -> Result<Option<u64>, String> {
        let need = self.resident_need(&Dims::of(srs));
        if let Some((weak, res, bytes)) = &self.resident[gpu] {
            if weak.upgrade().is_some_and(|r| Arc::ptr_eq(&r, srs)) {
                return Ok(Some(*bytes));
            }
            if self.staged[gpu] > 0 {
                return Ok(None);
            }
            self.vram[gpu].release(*res);
            self.resident[gpu] = None;
        }
        if need > self.vram[gpu].capacity() {
            return Err(format!("the parameters need {need} bytes resident on GPU {gpu}, more than its whole budget ({} bytes)", self.vram[gpu].capacity()));
        }
        let id = self.vram[gpu].try_reserve(need);
        if id.is_none() && self.vram[gpu].available() < self.vram[gpu].capacity() {
            self.memory_wait = true; // other processes hold what it needs: look again soon
        }
        Ok(id.map(|id| {
            self.resident[gpu] = Some((Arc::downgrade(srs), id, need));
            need
        }))
    }

    fn in_service(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.uploaders.len()).filter(|g| self.out_of_service[*g].is_none())
    }

    /// Counts a device-side failure on `gpu`; past the limit, and while another device is in
    /// service, takes it out of service.
    fn device_failed(&mut self, gpu: usize, what: &str) {
        let Some(n) = self.failures.get_mut(gpu) else {
            return;
        };
        *n += 1;
        let n = *n;
        let others = self.in_service().any(|g| g != gpu);
        if self.fail_limit > 0
            && n >= self.fail_limit
            && others
            && self.out_of_service[gpu].is_none()
        {
            let why = format!("{n} consecutive device failures; the last: {what}");
            slog::error!(crate::log::component("dispatcher"), "device taken out of service: its work goes to the other devices"; "gpu" => gpu, "why" => &why);
            self.out_of_service[gpu] = Some(why);
        }
    }

    /// Puts a partition that failed on `gpu` back in the ready queue, for another device in
    /// service, if a copy of it was kept; `false` if not.
    fn retry(&mut self, key: PartKey, gpu: usize) -> bool {
        let elsewhere: Vec<usize> = self.in_service().collect();
        let Some(st) = self.jobs.get_mut(&key.job) else {
            return false;
        };
        if st.cancelled.load(Ordering::Acquire) || st.reply.is_none() {
            return false;
        }
        let Some(f) = st.in_flight.get_mut(&key.partition) else {
            return false;
        };
        f.failed_on.push(gpu);
        if !elsewhere.iter().any(|g| !f.failed_on.contains(g)) {
            return false;
        }
        let Some(prepared) = f.copy.take() else {
            return false;
        };
        if let Some((g, v)) = f.vram.take() {
            self.vram[g].release(v);
        }
        f.gpu = None;
        st.ready.insert(key.partition, (prepared, Instant::now()));
        self.ready
            .insert((Reverse(st.priority), key.job, key.partition));
        slog::warn!(
            crate::log::job(key.job, Some(key.partition), &st.kind, Some(gpu)),
            "partition failed on a device: retried on another"
        );
        true
    }

    fn dispatch(&mut self) {
        'gpus: for gpu in 0..self.uploaders.len() {
            if self.uploading[gpu] || self.staged[gpu] >= self.depth {
                continue;
            }
            if self.out_of_service[gpu].is_some() {
                continue;
            }
            // Strict order: only the head of the ready queue may go next.
            let Some(&order) = self.ready.first() else {
                return;
            };
            let (_, job, partition) = order;
            let Some(srs) = self.jobs.get(&job).map(|st| st.spec_srs.clone()) else {
                self.ready.remove(&order);
                continue 'gpus;
            };
            // What the device has free now, not only what the engine has reserved.
            self.refresh_vram(gpu);
            let mut room = self.vram[gpu].capacity();
            let mut room_now = self.vram[gpu].available();
            if self.srs_resident {
                match self.make_resident(gpu, &srs) {
                    Ok(Some(resident)) => {
                        room -= resident;
                        room_now = room_now.saturating_sub(resident);
                    }
                    Ok(None) => continue 'gpus,
                    Err(what) => {
                        self.fail(job, JobError::Rejected { job, what });
                        return;
                    }
                }
            }
            let Some(st) = self.jobs.get_mut(&job) else {
                continue 'gpus;
            };
            let dims = Dims::of(&srs);
            // The tier the whole capacity would give; none: the partition can never fit here.
            let Some((whole_tier, _)) = choose(&dims, room, self.srs_resident) else {
                let what = format!("a partition needs more device memory than GPU {gpu}'s whole budget ({} bytes), even in the chunked tier", self.vram[gpu].capacity());
                self.fail(job, JobError::Rejected { job, what });
                return;
            };
            // While other processes hold memory, the tier is chosen by what they leave: a
            // partition that no longer fits whole takes the chunked tier, or waits.
            let Some((tier, bytes)) = choose(&dims, room_now, self.srs_resident) else {
                self.memory_wait = true;
                continue 'gpus;
            };
            let Some(res) = self.vram[gpu].try_reserve(bytes) else {
                if self.vram[gpu].available() < self.vram[gpu].capacity() {
                    self.memory_wait = true;
                }
                continue 'gpus;
            };
            self.ready.remove(&order);
            let Some((mut prepared, since)) = st.ready.remove(&partition) else {
                self.vram[gpu].release(res);
                continue 'gpus;
            };
            if let Tier::Chunked { chunk } = tier {
                prepared.msm_chunk = Some(chunk);
                if prepared.splits_pending() {
                    slog::info!(crate::log::job(job, Some(partition), &st.kind, Some(gpu)),
                        "the chunked tier computes on the host: the partition's MSM scalar splits are built there, beyond its host admission";
                        "witness_mib" => dims.host_witness() >> 20, "splits_mib" => (dims.host_recorded() - dims.host_witness()) >> 20);
                }
                if whole_tier == Tier::Full {
                    slog::info!(crate::log::job(job, Some(partition), &st.kind, Some(gpu)),
                        "other processes hold device memory: the partition takes the chunked tier";
                        "bytes" => bytes, "chunk" => chunk, "admits_mib" => room_now >> 20);
                }
            }
            let retry_possible = self.fail_limit > 0
                && (0..self.uploaders.len()).any(|g| g != gpu && self.out_of_service[g].is_none());
            if let Some(f) = st.in_flight.get_mut(&partition) {
                if f.failed_on.contains(&gpu) {
                    // It failed here before: leave it for another device.
                    st.ready.insert(partition, (prepared, since));
                    self.ready.insert(order);
                    self.vram[gpu].release(res);
                    continue 'gpus;
                }
                f.vram = Some((gpu, res));
                f.gpu = Some(gpu);
                f.copy = retry_possible.then(|| prepared.clone());
            }
            let now = Instant::now();
            st.first_upload.get_or_insert(now);
            self.timeline.record(
                PartKey { job, partition },
                "queue",
                Lane {
                    gpu: Some(gpu),
                    worker: None,
                },
                since,
                now,
                0,
            );
            let (r, s) = st.rs[partition];
            let ticket = Ticket {
                key: PartKey { job, partition },
                srs: st.spec_srs.clone(),
                r,
                s,
                cancelled: st.cancelled.clone(),
            };
            self.uploading[gpu] = true;
            self.staged[gpu] += 1;
            self.on_gpu[gpu].push(ticket.key);
            if self.dispatch_log.len() == DISPATCH_LOG {
                self.dispatch_log.pop_front();
            }
            self.dispatch_log.push_back(ticket.key);
            slog::debug!(crate::log::job(job, Some(partition), &st.kind, Some(gpu)), "partition dispatched"; "bytes" => bytes, "tier" => format!("{tier:?}"));
            self.uploaders[gpu].do_send(Upload {
                ticket,
                prepared,
                bytes,
            });
        }
    }
}

impl Actor for Dispatcher {
    type Context = Context<Self>;
}

impl Handler<SetUploaders> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: SetUploaders, ctx: &mut Context<Self>) {
        self.uploaders = msg.0;
        self.pump(ctx);
    }
}

impl Handler<Submit> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Submit, ctx: &mut Context<Self>) {
        let id = self.next_job;
        self.next_job += 1;
        let _ = msg.id.send(id);
        if self.stopping.is_some() {
            let what = "the engine is shutting down".to_string();
            let _ = msg.reply.send(Err(JobError::Rejected { job: id, what }));
            return;
        }
        let JobSpec {
            srs,
            partitions,
            synthesis,
            priority,
            randomness,
            kind,
        } = msg.spec;
        let count = partitions.len();
        let rs = match randomness {
            Randomness::Fixed(v) if v.len() == count => v,
            Randomness::Fixed(v) => {
                let what = format!("{count} partitions but {} (r, s) pairs", v.len());
                let _ = msg.reply.send(Err(JobError::Rejected { job: id, what }));
                return;
            }
            Randomness::Random => {
                let mut rng = rand::thread_rng();
                (0..count)
                    .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
                    .collect()
            }
        };
        if count == 0 {
            let _ = msg.reply.send(Err(JobError::Rejected {
                job: id,
                what: "no partitions".into(),
            }));
            return;
        }
        for p in 0..count {
            self.synth_queue.insert((Reverse(priority), id, p));
        }
        self.jobs.insert(
            id,
            JobState {
                spec_srs: srs,
                synthesis,
                kind,
                priority,
                synths: partitions.into_iter().map(Some).collect(),
                rs,
                done: (0..count).map(|_| None).collect(),
                remaining: count,
                cancelled: Arc::new(AtomicBool::new(false)),
                reply: Some(msg.reply),
                submitted: Instant::now(),
                first_upload: None,
                in_flight: HashMap::new(),
                ready: HashMap::new(),
            },
        );
        self.pump(ctx);
    }
}

impl Handler<Synthesized> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Synthesized, ctx: &mut Context<Self>) {
        self.synthesis_ended(msg.key);
        let PartKey { job, partition } = msg.key;
        let alive = self
            .jobs
            .get(&job)
            .is_some_and(|st| !st.cancelled.load(Ordering::Acquire));
        match msg.result {
            _ if !alive => self.release_all(msg.key),
            Ok(prepared) => {
                if let Some(st) = self.jobs.get_mut(&job) {
                    st.ready.insert(partition, (prepared, msg.at));
                    self.ready.insert((Reverse(st.priority), job, partition));
                }
            }
            Err(what) => {
                self.release_all(msg.key);
                self.fail(
                    job,
                    JobError::Failed {
                        job,
                        partition,
                        what,
                    },
                );
            }
        }
        self.forget_if_idle(job);
        self.pump(ctx);
    }
}

impl Handler<UploadDone> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: UploadDone, ctx: &mut Context<Self>) {
        self.uploading[msg.gpu] = false;
        if let Some(f) = self
            .jobs
            .get_mut(&msg.key.job)
            .and_then(|st| st.in_flight.get_mut(&msg.key.partition))
        {
            // A partition whose copy is kept for a retry keeps its host reservation.
            if f.copy.is_none() {
                if let Some(h) = f.host.take() {
                    self.host.release(h);
                }
            }
        }
        self.pump(ctx);
    }
}

impl Handler<ComputeDone> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: ComputeDone, ctx: &mut Context<Self>) {
        self.staged[msg.gpu] = self.staged[msg.gpu].saturating_sub(1);
        self.on_gpu[msg.gpu].retain(|k| *k != msg.key);
        if let Some(f) = self
            .jobs
            .get_mut(&msg.key.job)
            .and_then(|st| st.in_flight.get_mut(&msg.key.partition))
        {
            if let Some((gpu, v)) = f.vram.take() {
                self.vram[gpu].release(v);
            }
        }
        self.pump(ctx);
    }
}

impl Handler<Dropped> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Dropped, ctx: &mut Context<Self>) {
        self.synthesis_ended(msg.key);
        self.release_all(msg.key);
        self.forget_if_idle(msg.key.job);
        self.pump(ctx);
    }
}

impl Handler<PartitionDone> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: PartitionDone, ctx: &mut Context<Self>) {
        let PartKey { job, partition } = msg.key;
        let gpu = self
            .jobs
            .get(&job)
            .and_then(|st| st.in_flight.get(&partition))
            .and_then(|f| f.gpu);
        match (&msg.result, msg.device_fault) {
            (Ok(_), _) => {
                if let Some(n) = gpu.and_then(|g| self.failures.get_mut(g)) {
                    *n = 0;
                }
            }
            (Err(what), Some(g)) => {
                let what = what.clone();
                self.device_failed(g, &what);
                if self.retry(msg.key, g) {
                    self.pump(ctx);
                    return;
                }
            }
            (Err(_), None) => {}
        }
        self.release_all(msg.key);
        match msg.result {
            Err(what) => self.fail(
                job,
                JobError::Failed {
                    job,
                    partition,
                    what,
                },
            ),
            Ok(done) => {
                if let Some(st) = self.jobs.get_mut(&job) {
                    slog::debug!(crate::log::job(job, Some(partition), &st.kind, None), "partition proved"; "remaining" => st.remaining - 1);
                    st.done[partition] = Some(done);
                    st.remaining -= 1;
                    if st.remaining == 0 {
                        let now = Instant::now();
                        let (proofs, public_inputs): (Vec<_>, Vec<_>) =
                            st.done.drain(..).flatten().unzip();
                        let first = st.first_upload.unwrap_or(now);
                        let out = JobOutput {
                            id: job,
                            proofs,
                            public_inputs,
                            queue: first - st.submitted,
                            prove: now - first,
                            wall: now - st.submitted,
                        };
                        if let Some(reply) = st.reply.take() {
                            let _ = reply.send(Ok(out));
                        }
                    }
                }
            }
        }
        self.forget_if_idle(job);
        self.pump(ctx);
    }
}

impl Handler<Cancel> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Cancel, ctx: &mut Context<Self>) {
        let live = self.jobs.get(&msg.job).is_some_and(|st| st.reply.is_some());
        if live {
            self.fail(msg.job, JobError::Cancelled(msg.job));
        }
        let _ = msg.reply.send(live);
        self.pump(ctx);
    }
}

impl Handler<SetPaused> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: SetPaused, ctx: &mut Context<Self>) {
        self.paused = msg.0;
        self.pump(ctx);
    }
}

impl Handler<GetStatus> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) {
        let _ = msg.0.send(Status {
            jobs: self.jobs.len(),
            job_list: {
                let mut v: Vec<JobInfo> = self
                    .jobs
                    .iter()
                    .map(|(id, j)| JobInfo {
                        id: *id,
                        priority: j.priority,
                        partitions: j.done.len(),
                        done: j.done.len() - j.remaining,
                        in_flight: j.in_flight.len(),
                        cancelled: j.cancelled.load(Ordering::Acquire),
                        age_ms: j.submitted.elapsed().as_millis() as u64,
                    })
                    .collect();
                v.sort_by_key(|j| j.id);
                v
            },
            queued_synthesis: self.synth_queue.len(),
            queued_dispatch: self.ready.len(),
            in_flight: self.jobs.values().map(|j| j.in_flight.len()).sum(),
            paused: self.paused,
            vram: self.vram.iter().map(BudgetStatus::from).collect(),
            host: (&self.host).into(),
            dispatch_order: self
                .dispatch_log
                .iter()
                .map(|k| (k.job, k.partition))
                .collect(),
            on_gpu: self
                .on_gpu
                .iter()
                .map(|v| v.iter().map(|k| (k.job, k.partition)).collect())
                .collect(),
            resident: self
                .resident
                .iter()
                .map(|r| {
                    r.as_ref()
                        .and_then(|(w, _, _)| w.upgrade())
                        .map(|s| s.path().to_path_buf())
                })
                .collect(),
            out_of_service: self.out_of_service.clone(),
            uploading: self.uploading.clone(),
        });
    }
}

impl Handler<EvictResident> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: EvictResident, ctx: &mut Context<Self>) {
        let mut dropped = Vec::new();
        for gpu in 0..self.resident.len() {
            let Some((weak, _, _)) = &self.resident[gpu] else {
                continue;
            };
            let holder = weak.upgrade();
            let matches = match (&msg.srs, &holder) {
                (_, None) => true,
                (Some(s), Some(h)) => Arc::ptr_eq(s, h),
                (None, Some(_)) => false,
            };
            if !matches {
                continue;
            }
            if self.staged[gpu] > 0 || self.uploading[gpu] {
                slog::info!(
                    crate::log::component("dispatcher"),
                    "resident parameters kept on GPU {} while {} partition(s) are staged there",
                    gpu,
                    self.staged[gpu]
                );
                continue;
            }
            if let Some(d) = self.drop_resident(gpu) {
                dropped.push(d);
            }
        }
        if !dropped.is_empty() {
            // The budget freed may let a waiting partition go.
            self.pump(ctx);
        }
        if let Some(r) = msg.reply {
            let _ = r.send(dropped);
        }
    }
}

impl Dispatcher {
    /// Releases `gpu`'s resident-parameter reservation and has its UploadActor free the device
    /// copy (`Backend::evict_resident`).
    fn drop_resident(&mut self, gpu: usize) -> Option<ResidentDropped> {
        let (_, res, reserved) = self.resident[gpu].take()?;
        self.vram[gpu].release(res);
        let (tx, freed) = crossbeam_channel::bounded(1);
        match self.uploaders.get(gpu) {
            Some(u) => u.do_send(DropResident { reply: Some(tx) }),
            None => {
                let _ = tx.send(Err(format!("GPU {gpu} has no uploader")));
            }
        }
        Some(ResidentDropped {
            gpu,
            reserved,
            freed,
        })
    }
}

impl Handler<Shutdown> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) {
        let live: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, st)| st.reply.is_some())
            .map(|(id, _)| *id)
            .collect();
        for job in live {
            self.fail(job, JobError::EngineStopped(job));
        }
        slog::info!(crate::log::component("dispatcher"), "shutting down: jobs answered, waiting for running stages";
            "in_flight" => self.jobs.values().map(|j| j.in_flight.len()).sum::<usize>());
        self.stopping = Some(Some(msg.reply));
        self.pump(ctx);
    }
}
