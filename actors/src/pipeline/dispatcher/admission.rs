//! Host admission: a submitted job's partitions queue for synthesis, and each starts when its
//! host-memory reservation fits both the host budget and what the machine has available (less
//! the reserve, and less what partitions already synthesizing will still allocate). The first
//! partition of a shape with no recording records it alone; the others of that shape wait for
//! it, then synthesize witness-only. A synthesized partition joins the ready queue.
//!
//! At most one partition per synthesis worker is admitted at a time, so none waits inside the
//! workers' channel: the next one is chosen from the queue (priority class first) when a worker
//! frees, and a CRITICAL partition submitted behind a LOW stream synthesizes next. Each carries
//! its job's cancel flag into `Prepared` (`ProveOptions::cancel`), so its compute stops when the
//! job is cancelled.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::prover::ProveOptions;

use super::host_need::host_need;
use super::{Dispatcher, InFlight, Order};
use crate::pipeline::job::{JobError, Synthesis};
use crate::pipeline::messages::Synthesized;
use crate::pipeline::synth_workers::SynthWorkers;
use crate::pipeline::synthesis::SynthesisRun;
use crate::pipeline::work::PartKey;
use crate::resources::budget::{Budget, ReservationId};
use crate::resources::host_memory::{HostMem, HostMemory};
use crate::resources::tier::Dims;

/// The host side of admission.
pub(super) struct HostAdmission {
    /// The host budget: synthesized partitions' bytes, reserved before synthesis starts.
    pub(super) host: Budget,
    /// The machine's memory, read before each partition's synthesis starts.
    host_memory: HostMemory,
    /// Host bytes kept free for the rest of the process and the system.
    host_reserve: u64,
    /// Partitions waiting to synthesize, in order.
    pub(super) synth_queue: BTreeSet<Order>,
    synth: SynthWorkers,
    /// The synthesis workers: at most this many partitions are admitted at once.
    threads: usize,
    /// Partitions synthesizing now, with the host bytes they were admitted for (memory they will
    /// still allocate, so the available memory read later is short of it).
    synthesizing: HashMap<PartKey, u64>,
    /// Which of them records its circuit type's shape (its key).
    recording: HashMap<PartKey, &'static str>,
    /// Synthesis waits for host memory (logged once per wait).
    host_waiting: bool,
}

impl HostAdmission {
    pub(super) fn new(
        capacity: u64,
        synth_threads: usize,
        host_memory: HostMemory,
        host_reserve: u64,
    ) -> Result<Self, String> {
        Ok(HostAdmission {
            host: Budget::new("host", capacity),
            host_memory,
            host_reserve,
            synth_queue: BTreeSet::new(),
            synth: SynthWorkers::new(synth_threads.max(1))?,
            threads: synth_threads.max(1),
            synthesizing: HashMap::new(),
            recording: HashMap::new(),
            host_waiting: false,
        })
    }

    /// Whether `need` bytes fit what the machine has now (`m`), less the reserve and what
    /// partitions that already started will still allocate (counted in full: some of it may be
    /// in use already, which errs on the safe side). The reserve is kept while we hold
    /// something; with nothing held, a partition that fits what is available starts (so one
    /// always can, on any machine).
    fn machine_room(&mut self, need: u64, m: HostMem) -> Room {
        let pending: u64 = self.synthesizing.values().sum();
        let reserve = if self.host.live() == 0 {
            0
        } else {
            self.host_reserve
        };
        let free = m.available.saturating_sub(reserve).saturating_sub(pending);
        if need <= free {
            return Room::Fits;
        }
        if self.host.live() == 0 && need > m.total {
            return Room::Never(format!(
                "a partition needs {need} host bytes; the machine has {} in all",
                m.total
            ));
        }
        // Logged when nothing of ours is synthesizing (else it is the pipeline's ordinary
        // pacing), once per wait.
        if !self.host_waiting && pending == 0 {
            self.host_waiting = true;
            slog::info!(crate::log::component("dispatcher"),
                "synthesis waits for host memory";
                "need_mib" => need >> 20, "available_mib" => m.available >> 20,
                "pending_mib" => pending >> 20, "reserve_mib" => self.host_reserve >> 20,
                "partitions_held" => self.host.live());
        }
        Room::Wait
    }
}

/// Whether a partition fits the machine's memory now.
enum Room {
    Fits,
    /// Not until other processes (or time) free memory.
    Wait,
    /// Never on this machine (the reason).
    Never(String),
}

/// What the synthesis queue may do at one of its partitions.
enum Admit {
    /// Skip it (gone, waiting for its shape's recording, or rejected); look at the next.
    Next,
    /// Back-pressure: wait for a release of ours.
    Wait,
    /// Wait for memory that only other processes (or time) free: look again soon.
    WaitForMemory,
    /// Admitted: its host reservation is made.
    Start(Admitted),
}

/// A partition admitted to synthesis.
struct Admitted {
    key: PartKey,
    how: Synthesis,
    need: u64,
    splits_on_device: bool,
    products_on_host: bool,
    /// It may stream: its witness is packed at synthesis.
    streams: bool,
    res: ReservationId,
}

impl Dispatcher {
    /// Starts the queued partitions that may start now, in order. Returns whether one waits for
    /// host memory that only other processes (or time) can free, so the caller looks again soon.
    pub(super) fn start_synthesis(&mut self, ctx: &mut Context<Self>) -> bool {
        let orders: Vec<Order> = self.admission.synth_queue.iter().copied().collect();
        let mem = self.admission.host_memory.read();
        for order in orders {
            if self.admission.synthesizing.len() >= self.admission.threads {
                // Every worker is busy: the next one is chosen when one frees.
                return false;
            }
            match self.admit(order, mem) {
                Admit::Next => continue,
                Admit::Wait => return false,
                Admit::WaitForMemory => return true,
                Admit::Start(a) => self.begin_synthesis(a, ctx),
            }
        }
        false
    }

    /// Admits the queued partition `order` if its host reservation fits the machine (`mem`, when
    /// it can be read) and the host budget.
    fn admit(&mut self, order: Order, mem: Option<HostMem>) -> Admit {
        let (_, job, partition) = order;
        let Some(st) = self.jobs.get_mut(&job) else {
            self.admission.synth_queue.remove(&order);
            return Admit::Next;
        };
        if st.synths[partition].is_none() {
            self.admission.synth_queue.remove(&order);
            return Admit::Next;
        }
        let how = (st.synthesis)();
        if let Synthesis::Unrecorded { key } = how {
            if self.admission.recording.values().any(|k| *k == key) {
                // Another partition records this shape: wait for it, then go witness-only.
                return Admit::Next;
            }
        }
        let dims = Dims::of(&st.spec_srs);
        let splits_on_device = self.placement.splits_on_device(&dims);
        let streams = self.placement.streams(&dims);
        // Products at synthesis pay only where synthesis can run ahead of the GPU: with room in
        // the host budget for two such partitions (on an H100 at a 16 GiB VRAM budget, a 36 GiB
        // host budget held one, and synthesis, products included, became the bottleneck).
        let products_on_host = self.placement.products_on_host(&dims)
            && self.admission.host.capacity() >= 2 * dims.host_products();
        let mut how = how;
        let mut need = host_need(&dims, how, splits_on_device, streams, products_on_host);
        let most = mem.map_or(self.admission.host.capacity(), |m| {
            m.total.min(self.admission.host.capacity())
        });
        if matches!(how, Synthesis::Checked { .. }) && need > most {
            // A budget (or machine) that never holds the check beside a witness skips it (the
            // recording's sampled rows and `prepare`'s row check still run, and every proof is
            // verified).
            slog::warn!(crate::log::job(job, Some(partition), &st.kind, None),
                "the recording's periodic full check is skipped: it needs more host memory than the host budget (or the machine) has";
                "need_mib" => need >> 20, "most_mib" => most >> 20);
            how = Synthesis::Recorded;
            need = host_need(&dims, how, splits_on_device, streams, products_on_host);
        }
        if let Some(m) = mem {
            match self.admission.machine_room(need, m) {
                Room::Fits => {}
                Room::Wait => return Admit::WaitForMemory,
                Room::Never(what) => {
                    self.fail(job, JobError::Rejected { job, what });
                    return Admit::Next;
                }
            }
        }
        let Some(res) = self.admission.host.try_reserve(need) else {
            if self.admission.host.live() == 0 {
                let what = format!(
                    "a partition needs {need} host bytes; the host budget is {}",
                    self.admission.host.capacity()
                );
                self.fail(job, JobError::Rejected { job, what });
                return Admit::Next;
            }
            return Admit::Wait; // back-pressure: wait for a release
        };
        self.admission.host_waiting = false;
        self.admission.synth_queue.remove(&order);
        Admit::Start(Admitted {
            key: PartKey { job, partition },
            how,
            need,
            splits_on_device,
            products_on_host,
            streams,
            res,
        })
    }

    /// Records an admitted partition as in flight and sends its synthesis to the pool.
    fn begin_synthesis(&mut self, a: Admitted, ctx: &mut Context<Self>) {
        let Admitted {
            key,
            how,
            need,
            splits_on_device,
            products_on_host,
            streams,
            res,
        } = a;
        let Some(st) = self.jobs.get_mut(&key.job) else {
            self.admission.host.release(res);
            return;
        };
        let Some(synth) = st.synths[key.partition].take() else {
            self.admission.host.release(res);
            return;
        };
        st.first_synth.get_or_insert_with(Instant::now);
        self.admission.synthesizing.insert(key, need);
        if let Synthesis::Unrecorded { key: shape } = how {
            self.admission.recording.insert(key, shape);
        }
        if let Synthesis::Checked { recording } = how {
            slog::info!(crate::log::job(key.job, Some(key.partition), &st.kind, None),
                "the recording's periodic full check falls on this partition: synthesized in full and compared with it";
                "recording_mib" => recording >> 20, "host_mib" => need >> 20);
        }
        st.in_flight.insert(
            key.partition,
            InFlight {
                host: Some(res),
                vram: None,
                gpu: None,
                copy: None,
                failed_on: Vec::new(),
            },
        );
        let addr = ctx.address();
        let run = SynthesisRun {
            key,
            synth,
            srs: st.spec_srs.clone(),
            opts: ProveOptions {
                splits_on_device,
                products_on_host: products_on_host
                    && matches!(how, Synthesis::Recorded | Synthesis::Checked { .. }),
                // A streamed partition's device uploads its witness: packed at synthesis, not on
                // the GPU's turn (the uploader's 0.31 s a 32 GiB partition at `5a5445e`).
                pack_witness: streams && splits_on_device && !products_on_host,
                cancel: cuzk_engine::Cancel::from_flag(st.cancelled.clone()),
                ..ProveOptions::default()
            },
            // On the recorded path the dispatcher decides which partition the full check falls
            // on (it reserved its memory), not the recording cache's own count.
            check: match how {
                Synthesis::Recorded => Some(false),
                Synthesis::Checked { .. } => Some(true),
                Synthesis::Unrecorded { .. } | Synthesis::Full => None,
            },
            cancelled: st.cancelled.clone(),
            faults: self.faults.clone(),
            timeline: self.timeline.clone(),
            synthesized: addr.clone().recipient(),
            dropped: addr.recipient(),
        };
        self.admission.synth.spawn(move || run.run());
    }

    /// A partition's synthesis ended (or was dropped before it began).
    pub(super) fn synthesis_ended(&mut self, key: PartKey) {
        self.admission.synthesizing.remove(&key);
        self.admission.recording.remove(&key);
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
                    self.placement
                        .ready
                        .insert((Reverse(st.priority), job, partition));
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
