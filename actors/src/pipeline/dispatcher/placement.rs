//! Placement: a synthesized partition waits in the ready queue (priority class, then job age,
//! then partition index; only the head may go next), and the head goes to a GPU whose uploader
//! is idle and that has a slot for it (at most compute workers + 1 partitions staged per GPU, so
//! the order is decided when a slot frees; one more for a partition of a higher class than one
//! already there, so it waits in the GPU's compute queue ahead of that one), once its device
//! reservation fits that GPU's VRAM
//! budget as the device's memory stands. With `srs_resident`, a GPU first holds the job's
//! parameters resident ([`residency`](super::residency)).
//!
//! Before each reservation `refresh_vram` reads the device's memory (`Pipeline::memory`): while
//! other processes hold some, the budget admits at most total − others − `engine.vram_reserve_mib`.
//! The tier is chosen by what that leaves: a partition that no longer fits whole takes a smaller
//! tier (the chunked one; on a GPU pipeline, the plan `tier::GpuPlan` makes from the GPU's whole
//! budget), one that fits in none now waits (looked at again every 100 ms), and only one that
//! cannot fit the whole budget in any tier is rejected.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Weak};
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::prover::Prepared;
use cuzk_engine::Pipeline;
use cuzk_srs::Srs;

use super::{Dispatcher, Order};
use crate::pipeline::job::{JobError, JobId};
use crate::pipeline::messages::{SetPaused, SetUploaders, Upload};
use crate::pipeline::timeline::Lane;
use crate::pipeline::upload::UploadActor;
use crate::pipeline::work::{PartKey, Ticket};
use crate::resources::budget::{Budget, ReservationId};
use crate::resources::tier::{choose, Dims, Tier};

/// How many recent dispatches `Status` reports (a long-running daemon must not grow without end).
const DISPATCH_LOG: usize = 4096;

/// The GPU side of the dispatcher.
pub(super) struct Placement {
    pub(super) uploaders: Vec<Addr<UploadActor>>,
    pub(super) uploading: Vec<bool>,
    /// Partitions dispatched to each GPU whose compute has not ended.
    pub(super) staged: Vec<usize>,
    /// Which they are (for status).
    pub(super) on_gpu: Vec<Vec<PartKey>>,
    /// With `srs_resident`: the SRS whose bases each GPU holds, and their reservation.
    pub(super) resident: Vec<Option<(Weak<Srs>, ReservationId, u64)>>,
    /// How many may be: one per worker, plus one being uploaded ahead. The rest wait here, in
    /// order, so the next partition is chosen when a slot frees, not when it was synthesized.
    pub(super) depth: usize,
    pub(super) vram: Vec<Budget>,
    pub(super) srs_resident: bool,
    /// Synthesized partitions waiting for a GPU, in order.
    pub(super) ready: BTreeSet<Order>,
    /// The last partitions handed to uploaders, in order (at most `DISPATCH_LOG` of them).
    pub(super) dispatch_log: VecDeque<PartKey>,
    /// Dispatch paused (synthesis goes on).
    pub(super) paused: bool,
    devices: Vec<Arc<dyn Pipeline>>,
    vram_reserve: u64,
    /// A partition waits for memory other processes hold: pump again soon (no release of ours
    /// will say when theirs is freed).
    pub(super) memory_wait: bool,
    /// GPUs whose first streamed partition was logged.
    streamed_logged: std::collections::HashSet<usize>,
    /// Per GPU, the memory others held when the VRAM limit was last logged (`None`: never, or
    /// the budget was logged back at its capacity).
    others_logged: Vec<Option<u64>>,
    /// The recordings each GPU keeps resident beside the bases (`recordings.rs`).
    recordings: super::recordings::ResidentRecordings,
}

/// A partition's VRAM reservation on a GPU.
struct Reserved {
    /// The tier the GPU's whole budget would give it.
    whole: Tier,
    /// The tier it takes now, and its bytes.
    tier: Tier,
    bytes: u64,
    res: ReservationId,
    /// What the GPU admitted when it was made.
    room_now: u64,
}

impl Placement {
    pub(super) fn new(
        vram_capacity: &[u64],
        srs_resident: bool,
        workers_per_gpu: usize,
        devices: Vec<Arc<dyn Pipeline>>,
        vram_reserve: u64,
    ) -> Placement {
        let n = vram_capacity.len();
        Placement {
            uploaders: Vec::new(),
            uploading: vec![false; n],
            staged: vec![0; n],
            on_gpu: vec![Vec::new(); n],
            resident: vec![None; n],
            depth: workers_per_gpu + 1,
            vram: vram_capacity
                .iter()
                .enumerate()
                .map(|(i, c)| Budget::new(format!("vram{i}"), *c))
                .collect(),
            srs_resident,
            ready: BTreeSet::new(),
            dispatch_log: VecDeque::new(),
            paused: false,
            devices,
            vram_reserve,
            memory_wait: false,
            streamed_logged: Default::default(),
            others_logged: vec![None; n],
            recordings: super::recordings::ResidentRecordings::new(n),
        }
    }

    /// Whether `gpu`'s uploader is idle and a slot is free there; or, for a partition that
    /// outranks one already there (`outranks`), one slot beyond them, so that it waits in the
    /// GPU's compute queue ahead of that one's turn instead of behind it.
    fn has_slot(&self, gpu: usize, outranks: bool) -> bool {
        !self.uploading[gpu] && self.staged[gpu] < self.depth + usize::from(outranks)
    }

    /// Reads `gpu`'s memory and limits its budget to what other processes leave
    /// ([`vram_limit::refresh`](super::vram_limit::refresh)).
    fn refresh_vram(&mut self, gpu: usize) {
        if let Some(d) = self.devices.get(gpu) {
            let (budget, logged) = (&mut self.vram[gpu], &mut self.others_logged[gpu]);
            super::vram_limit::refresh(&**d, gpu, budget, self.vram_reserve, logged);
        }
    }

    /// Whether partitions of this shape leave their MSM scalar splits to the device: every
    /// device builds them (a GPU pipeline from the witness it uploads in the whole tier, or from
    /// the witness on the host while the H-MSM runs in the streamed one; a plain backend only
    /// if it would take such a partition whole: its chunked tier computes on the host, which
    /// then builds them beyond what the partition was admitted for, logged when it happens).
    pub(super) fn splits_on_device(&self, dims: &Dims) -> bool {
        !self.devices.is_empty()
            && self.devices.iter().enumerate().all(|(g, d)| {
                d.splits_on_device()
                    && if self.srs_resident {
                        self.gpu_plan(g, dims).is_some()
                    } else {
                        let room = self.vram[g].capacity();
                        matches!(choose(dims, room, false), Some((Tier::Full, _)))
                    }
            })
    }

    /// The room `gpu` has for a partition of `srs`: its whole budget, and what it admits now
    /// (what the device has free, not only what the engine has reserved, and never more than
    /// the budget leaves beside the recordings the GPU holds resident), each less the resident
    /// parameters where the SRS stays resident. `None`: not now.
    fn room(&mut self, gpu: usize, srs: &Arc<Srs>) -> Result<Option<(u64, u64)>, String> {
        self.refresh_vram(gpu);
        // The held recordings count as others' memory to the device's reading, which limits
        // the budget only where the card itself is the limit: under a smaller VRAM budget they
        // are taken from it here, for this reservation and those the budget admits after it.
        let held = self.recordings.held_bytes(gpu);
        let budget = &mut self.vram[gpu];
        let beside = budget.capacity().saturating_sub(held);
        if held > 0 && beside < budget.available() {
            budget.set_limit(Some(beside));
        }
        let mut room = budget.capacity();
        let mut room_now = budget.available();
        if self.srs_resident {
            match self.make_resident(gpu, srs)? {
                Some(resident) => {
                    room -= resident;
                    room_now = room_now.saturating_sub(resident);
                }
                None => return Ok(None),
            }
        }
        Ok(Some((room, room_now)))
    }

    /// Reserves `gpu`'s memory for a partition of `dims` in the tier its room gives. An error
    /// when it can never fit there; `None` when not now.
    fn reserve(
        &mut self,
        gpu: usize,
        dims: &Dims,
        (room, room_now): (u64, u64),
    ) -> Result<Option<Reserved>, String> {
        // The tier the whole capacity would give (none: the partition can never fit here), and
        // the one what others leave now gives (none: wait). A GPU pipeline plans from its
        // whole budget (`GpuPlan`): resident and whole, or streamed.
        let (whole, now) = if self.srs_resident {
            let plan = self.gpu_plan(gpu, dims);
            (
                plan.and_then(|p| p.tier(dims, room)),
                plan.and_then(|p| p.tier(dims, room_now)),
            )
        } else {
            (choose(dims, room, false), choose(dims, room_now, false))
        };
        let Some((whole, _)) = whole else {
            return Err(format!("a partition needs more device memory than GPU {gpu}'s whole budget ({} bytes): the parameters cannot be resident, and even the streamed (or chunked) tier needs more", self.vram[gpu].capacity()));
        };
        // While other processes hold memory, the tier is chosen by what they leave: a
        // partition that no longer fits whole takes a smaller tier, or waits.
        let Some((tier, bytes)) = now else {
            self.memory_wait = true;
            return Ok(None);
        };
        let Some(res) = self.vram[gpu].try_reserve(bytes) else {
            if self.vram[gpu].available() < self.vram[gpu].capacity() {
                self.memory_wait = true;
            }
            return Ok(None);
        };
        Ok(Some(Reserved {
            whole,
            tier,
            bytes,
            res,
            room_now,
        }))
    }

    /// Hands the partition to `gpu`'s uploader and counts it there.
    fn send(&mut self, gpu: usize, ticket: Ticket, prepared: Prepared, bytes: u64) {
        self.uploading[gpu] = true;
        self.staged[gpu] += 1;
        self.on_gpu[gpu].push(ticket.key);
        if self.dispatch_log.len() == DISPATCH_LOG {
            self.dispatch_log.pop_front();
        }
        self.dispatch_log.push_back(ticket.key);
        self.uploaders[gpu].do_send(Upload {
            ticket,
            prepared,
            bytes,
        });
    }
}

/// Whether dispatch goes on to the next GPU.
enum Flow {
    Next,
    /// The head's job was rejected: stop this round.
    Stop,
}

impl Dispatcher {
    /// Hands the head of the ready queue to each GPU that can take it now, in order.
    pub(super) fn dispatch(&mut self) {
        for gpu in 0..self.placement.uploaders.len() {
            if self.failover.out_of_service[gpu].is_some() {
                continue;
            }
            // Strict order: only the head of the ready queue may go next.
            let Some(&order) = self.placement.ready.first() else {
                return;
            };
            let outranks = self.placement.on_gpu[gpu].iter().any(|k| {
                self.jobs
                    .get(&k.job)
                    .is_none_or(|st| st.priority < order.0 .0)
            });
            if !self.placement.has_slot(gpu, outranks) {
                continue;
            }
            if let Flow::Stop = self.place(gpu, order) {
                return;
            }
        }
    }

    /// Places the partition `order` on `gpu` if its reservation fits there now.
    fn place(&mut self, gpu: usize, order: Order) -> Flow {
        let (_, job, partition) = order;
        let key = PartKey { job, partition };
        let Some(srs) = self.jobs.get(&job).map(|st| st.spec_srs.clone()) else {
            self.placement.ready.remove(&order);
            return Flow::Next;
        };
        let room = match self.placement.room(gpu, &srs) {
            Ok(Some(room)) => room,
            Ok(None) => return Flow::Next,
            Err(what) => return self.reject(job, what),
        };
        if !self.jobs.contains_key(&job) {
            return Flow::Next;
        }
        // A recorded partition may keep its recording resident beside the bases.
        let rec = self.jobs.get(&job).and_then(|st| {
            let (p, _) = st.ready.get(&partition)?;
            p.recorded.as_ref().map(|r| r.rec.clone())
        });
        let on_gpu = rec.as_ref().map(|r| self.placement.recordings.on(gpu, r));
        let dims = Dims::of(&srs).with_recording(on_gpu);
        let r = match self.placement.reserve(gpu, &dims, room) {
            Ok(Some(r)) => r,
            Ok(None) => return Flow::Next,
            Err(what) => return self.reject(job, what),
        };
        let retry_possible = self.retry_possible(gpu);
        self.placement.ready.remove(&order);
        let Some(st) = self.jobs.get_mut(&job) else {
            self.placement.vram[gpu].release(r.res);
            return Flow::Next;
        };
        let Some((mut prepared, since)) = st.ready.remove(&partition) else {
            self.placement.vram[gpu].release(r.res);
            return Flow::Next;
        };
        if let Tier::Streamed(t) = r.tier {
            prepared.stream = Some(t);
            if self.placement.streamed_logged.insert(gpu) {
                slog::info!(crate::log::job(job, Some(partition), &st.kind, Some(gpu)),
                    "partitions take the streamed tier: the steps one after another, the bases streamed in chunks or read where resident";
                    "device_bytes" => r.bytes, "chunk" => t.chunk, "resident_bases" => t.resident_bases,
                    "device_products" => t.device_products, "resident_recording" => t.resident_recording,
                    "budget_mib" => self.placement.vram[gpu].capacity() >> 20);
            }
        }
        if let Tier::Chunked { chunk } = r.tier {
            prepared.msm_chunk = Some(chunk);
            let l = crate::log::job(job, Some(partition), &st.kind, Some(gpu));
            chunked_notes(&l, &prepared, &dims, &r, chunk);
        }
        if let Some(f) = st.in_flight.get_mut(&partition) {
            if f.failed_on.contains(&gpu) {
                // It failed here before: leave it for another device.
                st.ready.insert(partition, (prepared, since));
                self.placement.ready.insert(order);
                self.placement.vram[gpu].release(r.res);
                return Flow::Next;
            }
            f.vram = Some((gpu, r.res));
            f.gpu = Some(gpu);
            f.copy = retry_possible.then(|| prepared.clone());
        }
        let now = Instant::now();
        st.first_upload.get_or_insert(now);
        let lane = Lane {
            gpu: Some(gpu),
            worker: None,
        };
        self.timeline.record(key, "queue", lane, since, now, 0);
        slog::debug!(crate::log::job(job, Some(partition), &st.kind, Some(gpu)), "partition dispatched"; "bytes" => r.bytes, "tier" => format!("{:?}", r.tier));
        let ticket = st.ticket(key);
        if let (Tier::Streamed(t), Some(rec)) = (r.tier, &rec) {
            if t.resident_recording {
                self.placement.recordings.sent(gpu, rec);
            }
        }
        self.placement.send(gpu, ticket, prepared, r.bytes);
        Flow::Next
    }

    /// Fails the job whose partition can never be placed.
    fn reject(&mut self, job: JobId, what: String) -> Flow {
        self.fail(job, JobError::Rejected { job, what });
        Flow::Stop
    }
}

/// Logs what the chunked tier means for a partition: its MSM scalar splits are built on the
/// host, and, where the whole budget would have taken it whole, that other processes' memory
/// is why.
fn chunked_notes(l: &slog::Logger, prepared: &Prepared, dims: &Dims, r: &Reserved, chunk: usize) {
    if prepared.splits_pending() {
        slog::info!(l,
            "the chunked tier computes on the host: the partition's MSM scalar splits are built there, beyond its host admission";
            "witness_mib" => dims.host_witness() >> 20, "splits_mib" => (dims.host_recorded() - dims.host_witness()) >> 20);
    }
    if r.whole == Tier::Full {
        slog::info!(l,
            "other processes hold device memory: the partition takes the chunked tier";
            "bytes" => r.bytes, "chunk" => chunk, "admits_mib" => r.room_now >> 20);
    }
}

impl Handler<SetUploaders> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: SetUploaders, ctx: &mut Context<Self>) {
        self.placement.uploaders = msg.0;
        self.pump(ctx);
    }
}

impl Handler<SetPaused> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: SetPaused, ctx: &mut Context<Self>) {
        self.placement.paused = msg.0;
        self.pump(ctx);
    }
}
