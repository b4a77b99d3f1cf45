//! ComputeActor (`gpu_workers_per_device` per GPU): takes the best partition waiting in its GPU's
//! [`ComputeQueue`] (highest priority class, then older job, then lower partition: a CRITICAL
//! partition staged behind a LOW one runs first), runs (on a GPU: queues) its kernels under the
//! per-GPU kernel turn (taken in the order partitions leave the queue, held only until the
//! backend says the next partition may start: on a GPU, once this one's kernels are queued behind
//! the previous one's), and hands the results to the MsmCollector. The partition's device
//! reservation is released when its device memory is free: here, when compute ends, for a
//! backend whose results are on the host; by the collector, after collecting, for one whose
//! results (and running kernels) are still on the device.
//!
//! A partition whose job is cancelled while it computes stops at the backend's next step
//! boundary (its `Prepared` carries the job's cancel flag: `cuzk_engine::Cancel`) and is
//! dropped, not failed nor retried: its reservations are released.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::pipeline::Staged;
use cuzk_engine::{Pipeline, Timings};

use crate::fault::{catch, scope};
use crate::pipeline::collector::MsmCollector;
use crate::pipeline::job::{JobId, Priority};
use crate::pipeline::messages::{
    Collect, Compute, ComputeDone, Dropped, PartitionDone, StageReports,
};
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::turns::Turns;
use crate::pipeline::work::{failed_at, Ticket};

/// Where a partition waits in a [`ComputeQueue`]: priority class, job, partition, then arrival.
type Place = (Reverse<Priority>, JobId, usize, u64);

/// One GPU's staged partitions waiting for a compute worker. The UploadActor puts each in (and
/// sends the workers a [`Compute`]); a worker takes the best one, with its kernel turn.
#[derive(Default)]
pub struct ComputeQueue {
    inner: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    waiting: BTreeMap<Place, (Ticket, Staged)>,
    /// Partitions put in so far (ties broken by arrival).
    arrived: u64,
    /// Turns handed out so far: the next taken partition's kernel turn.
    taken: u64,
}

impl ComputeQueue {
    /// Puts a staged partition in.
    pub fn push(&self, ticket: Ticket, staged: Staged) {
        let mut q = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let place = (
            Reverse(ticket.priority),
            ticket.key.job,
            ticket.key.partition,
            q.arrived,
        );
        q.arrived += 1;
        q.waiting.insert(place, (ticket, staged));
    }

    /// Takes the best waiting partition and its kernel turn (turns go in the order partitions
    /// are taken, so every turn number is taken once).
    pub fn pop(&self) -> Option<(Ticket, Staged, u64)> {
        let mut q = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (_, (ticket, staged)) = q.waiting.pop_first()?;
        let seq = q.taken;
        q.taken += 1;
        Some((ticket, staged, seq))
    }
}

pub struct ComputeActor {
    pub gpu: usize,
    pub worker: usize,
    pub backend: Arc<dyn Pipeline>,
    /// The per-GPU kernel lock, shared by this GPU's workers, taken in the order partitions leave the queue.
    pub turns: Arc<Turns>,
    /// This GPU's staged partitions, taken best first.
    pub queue: Arc<ComputeQueue>,
    pub collector: Addr<MsmCollector>,
    /// The dispatcher, told what becomes of a partition here (its device memory free, dropped,
    /// failed).
    pub reports: StageReports,
    pub timeline: Timeline,
}

impl Actor for ComputeActor {
    type Context = SyncContext<Self>;
}

impl Handler<Compute> for ComputeActor {
    type Result = ();

    fn handle(&mut self, _: Compute, _: &mut SyncContext<Self>) {
        // One message per partition put in: there is one to take.
        let Some((ticket, staged, seq)) = self.queue.pop() else {
            return;
        };
        let key = ticket.key;
        let lane = Lane {
            gpu: Some(self.gpu),
            worker: Some(self.worker),
        };
        let wait = Instant::now();
        if ticket.is_cancelled() {
            // Take (and pass on) the turn, so the partitions staged after this one still run.
            drop(self.turns.wait(seq));
            self.reports
                .compute_done
                .do_send(ComputeDone { gpu: self.gpu, key });
            self.reports.dropped.do_send(Dropped { key });
            return;
        }
        let result = {
            let mut turn = Some(self.turns.wait(seq));
            let start = Instant::now();
            self.timeline
                .record(key, "mutex_wait", lane, wait, start, 0);
            let mut t = Timings::default();
            let mut launched_at = None;
            let backend = &self.backend;
            // A panic inside the backend fails this partition (and passes the turn on), never
            // the worker thread.
            let r = catch("compute", || {
                scope(key, || {
                    backend.compute_then(&ticket.srs, staged, &mut t, &mut || {
                        launched_at.get_or_insert_with(Instant::now);
                        turn.take();
                    })
                })
                .map_err(|e| e.to_string())
            });
            drop(turn);
            let end = Instant::now();
            self.timeline
                .record(key, "launch", lane, start, launched_at.unwrap_or(end), 0);
            self.timeline.record(key, "compute", lane, start, end, 0);
            for (stage, a, b) in t.events {
                self.timeline.record(key, stage, lane, a, b, 0);
            }
            r
        };
        match result {
            Ok(computed) => {
                if !computed.holds_device {
                    self.reports
                        .compute_done
                        .do_send(ComputeDone { gpu: self.gpu, key });
                }
                self.collector.do_send(Collect { ticket, computed })
            }
            Err(_) if ticket.is_cancelled() => {
                // Its job was cancelled while it ran (the backend stopped at a step boundary):
                // dropped, not failed nor retried; its reservations go back.
                self.reports
                    .compute_done
                    .do_send(ComputeDone { gpu: self.gpu, key });
                self.reports.dropped.do_send(Dropped { key });
            }
            Err(e) => {
                self.reports
                    .compute_done
                    .do_send(ComputeDone { gpu: self.gpu, key });
                self.reports.partition_done.do_send(PartitionDone {
                    key,
                    result: Err(failed_at("compute", self.gpu, self.backend.name(), e)),
                    device_fault: Some(self.gpu),
                })
            }
        }
    }
}
