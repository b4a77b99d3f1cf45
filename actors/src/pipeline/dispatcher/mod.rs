//! The dispatcher: owns the job table, the queues and both budgets (VRAM per GPU, host memory).
//!
//! - Synthesis: a submitted job's partitions queue for synthesis; each starts when its host-memory
//!   reservation fits the budget and the machine's available memory (less what partitions
//!   already synthesizing will still take) — back-pressure to synthesis — and runs on the
//!   synthesis pool. The first partition of a shape with no recording records it alone; the
//!   others of that shape wait for it and then synthesize witness-only.
//! - Dispatch: a synthesized partition waits in the ready queue, ordered by priority class, then
//!   job age, then partition index. The head goes to a GPU whose uploader is idle once its device
//!   reservation fits (a partition too large for the whole budget takes a smaller tier: the
//!   chunked one, or on a GPU pipeline the streamed one).
//! - Reservations are released as stages end (host after upload, device after compute) or when a
//!   cancelled partition is dropped; a job's result is assembled in partition order.
//!
//! One actor, cut by concern into `impl Dispatcher` blocks over a few fields each: this file
//! holds the job table (submitted jobs, their partitions in flight, a job's end) and the pump
//! that moves work on after every message; [`reports`] the stages' reports of what a partition
//! leaving them gives back; [`submit`] a job's submission; [`admission`] the host budget and the
//! synthesis queue
//! ([`HostAdmission`](admission::HostAdmission)); [`placement`] the ready queue, the VRAM
//! budgets, tiers and the hand-over to the uploaders ([`Placement`](placement::Placement));
//! [`residency`] each GPU's plan (`tier::GpuPlan`) and the parameters it keeps resident;
//! [`failover`] device failures, retries and devices out of service
//! ([`Failover`](failover::Failover)); [`status`] the status answer, the jobs using given
//! parameters, and shutdown; [`deadline`] a job that ends after its deadline.

mod admission;
mod deadline;
mod failover;
mod host_need;
mod placement;
mod recordings;
mod reports;
mod residency;
mod status;
mod submit;
mod vram_limit;

pub(crate) use deadline::DeadlinesMissed;
pub(crate) use status::JobsUsing;

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use crossbeam_channel::Sender;
use cuzk_engine::prover::Prepared;

use crate::fault::Faults;
use crate::pipeline::job::{JobError, JobId, JobOutput, Priority, SynthFn, SynthesisProbe};
use crate::pipeline::messages::Cancel;
use crate::pipeline::timeline::Timeline;
use crate::pipeline::upload::UploadActor;
use crate::pipeline::work::{PartKey, Ticket};
use crate::resources::budget::ReservationId;
use crate::resources::host_memory::HostMemory;

use admission::HostAdmission;
use failover::Failover;
use placement::Placement;

/// A partition's place in the queues: priority class first, then job age, then its index.
type Order = (Reverse<Priority>, JobId, usize);

/// How often a partition waiting for memory other processes hold looks again.
const MEMORY_POLL: std::time::Duration = std::time::Duration::from_millis(100);

struct InFlight {
    host: Option<ReservationId>,
    vram: Option<(usize, ReservationId)>,
    /// The device it was dispatched to.
    gpu: Option<usize>,
    /// A copy of the prepared partition, kept (with its host reservation) while another device
    /// is in service, so a device-side failure retries it there instead of failing the job.
    copy: Option<Prepared>,
    /// Devices it failed on.
    failed_on: Vec<usize>,
}

struct JobState {
    spec_srs: Arc<cuzk_srs::Srs>,
    synthesis: SynthesisProbe,
    kind: Arc<str>,
    priority: Priority,
    /// Due this long after `submitted` (reported, not scheduled by).
    deadline: Option<std::time::Duration>,
    synths: Vec<Option<SynthFn>>,
    rs: Vec<(Scalar, Scalar)>,
    done: Vec<Option<(Proof<Bls12>, Vec<Scalar>)>>,
    remaining: usize,
    cancelled: Arc<AtomicBool>,
    reply: Option<Sender<Result<JobOutput, JobError>>>,
    submitted: Instant,
    /// When the job's first partition began synthesizing: the end of its queue time.
    first_synth: Option<Instant>,
    first_upload: Option<Instant>,
    in_flight: HashMap<usize, InFlight>,
    /// Synthesized partitions waiting for dispatch.
    ready: HashMap<usize, (Prepared, Instant)>,
}

impl JobState {
    /// What partition `key` carries through the stages.
    fn ticket(&self, key: PartKey) -> Ticket {
        let (r, s) = self.rs[key.partition];
        Ticket {
            key,
            priority: self.priority,
            srs: self.spec_srs.clone(),
            r,
            s,
            cancelled: self.cancelled.clone(),
        }
    }
}

pub struct DispatcherConfig {
    pub vram_capacity: Vec<u64>,
    pub host_capacity: u64,
    pub srs_resident: bool,
    pub synth_threads: usize,
    pub workers_per_gpu: usize,
    /// The fault plan (tests; inert without the `faults` feature).
    pub faults: Faults,
    /// A device with this many consecutive device-side failures is taken out of service while
    /// another device is in service (0: never).
    pub device_fail_limit: u32,
    /// The devices, read for their memory before each VRAM reservation (`Pipeline::memory`), so
    /// memory other processes take after the start shrinks what is admitted.
    pub devices: Vec<Arc<dyn cuzk_engine::Pipeline>>,
    /// Device bytes kept free for the driver and other processes.
    pub vram_reserve: u64,
    /// The machine's memory, read before each partition's synthesis starts.
    pub host_memory: HostMemory,
    /// Host bytes kept free for the rest of the process and the system.
    pub host_reserve: u64,
    /// Where jobs that end after their deadline are counted (the engine reads it).
    pub deadlines_missed: DeadlinesMissed,
}

pub struct Dispatcher {
    jobs: HashMap<JobId, JobState>,
    next_job: JobId,
    /// The host budget, the synthesis queue and the synthesis pool.
    admission: HostAdmission,
    /// The ready queue, the VRAM budgets, residency and the uploaders.
    placement: Placement,
    /// Device failures and devices out of service.
    failover: Failover,
    timeline: Timeline,
    faults: Faults,
    deadlines_missed: DeadlinesMissed,
    memory_poll_armed: bool,
    /// Shutting down: new jobs refused; the reply goes out once nothing is in flight.
    stopping: Option<Option<Sender<Vec<Addr<UploadActor>>>>>,
}

impl Dispatcher {
    pub(crate) fn new(cfg: DispatcherConfig, timeline: Timeline) -> Result<Self, String> {
        let DispatcherConfig {
            vram_capacity,
            host_capacity,
            srs_resident,
            synth_threads,
            workers_per_gpu,
            faults,
            device_fail_limit,
            devices,
            vram_reserve,
            host_memory,
            host_reserve,
            deadlines_missed,
        } = cfg;
        let admission =
            HostAdmission::new(host_capacity, synth_threads, host_memory, host_reserve)?;
        Ok(Dispatcher {
            jobs: HashMap::new(),
            next_job: 1,
            admission,
            failover: Failover::new(vram_capacity.len(), device_fail_limit),
            placement: Placement::new(
                &vram_capacity,
                srs_resident,
                workers_per_gpu,
                devices,
                vram_reserve,
            ),
            timeline,
            faults,
            deadlines_missed,
            memory_poll_armed: false,
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
        self.admission.synth_queue.retain(|o| o.1 != job);
        let gone: Vec<Order> = self
            .placement
            .ready
            .iter()
            .filter(|o| o.1 == job)
            .copied()
            .collect();
        for o in gone {
            self.placement.ready.remove(&o);
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
                self.admission.host.release(h);
            }
            if let Some((gpu, v)) = f.vram {
                self.placement.vram[gpu].release(v);
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

    /// Moves work on: starts the syntheses that may start, dispatches what may go to the GPUs,
    /// and looks again soon where only other processes (or time) can free what waits.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.stopping.is_some() {
            self.answer_shutdown_once_idle();
            return;
        }
        let host_wait = self.start_synthesis(ctx);
        self.placement.memory_wait = false;
        if !self.placement.paused {
            self.dispatch();
        }
        if (self.placement.memory_wait || host_wait) && !self.memory_poll_armed {
            self.memory_poll_armed = true;
            ctx.run_later(MEMORY_POLL, |d, ctx| {
                d.memory_poll_armed = false;
                d.pump(ctx);
            });
        }
    }

    /// A partition's proof is in: kept in partition order; the job's result goes out with its
    /// last one.
    fn partition_proved(&mut self, key: PartKey, done: (Proof<Bls12>, Vec<Scalar>)) {
        let PartKey { job, partition } = key;
        let Some(st) = self.jobs.get_mut(&job) else {
            return;
        };
        slog::debug!(crate::log::job(job, Some(partition), &st.kind, None), "partition proved"; "remaining" => st.remaining - 1);
        st.done[partition] = Some(done);
        st.remaining -= 1;
        if st.remaining == 0 {
            let now = Instant::now();
            let (proofs, public_inputs): (Vec<_>, Vec<_>) = st.done.drain(..).flatten().unzip();
            let first = st.first_upload.unwrap_or(now);
            let wall = now - st.submitted;
            let out = JobOutput {
                id: job,
                proofs,
                public_inputs,
                queue: st.first_synth.unwrap_or(first) - st.submitted,
                prove: now - first,
                wall,
                deadline: st.deadline,
                missed_deadline_by: self
                    .deadlines_missed
                    .judge(job, &st.kind, st.deadline, wall),
            };
            if let Some(reply) = st.reply.take() {
                let _ = reply.send(Ok(out));
            }
        }
    }
}

impl Actor for Dispatcher {
    type Context = Context<Self>;
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
