//! ComputeActor (`gpu_workers_per_device` per GPU): runs (on a GPU: queues) a staged partition's
//! kernels under the per-GPU kernel turn (taken in staging order, held only until the backend
//! says the next partition may start: on a GPU, once this one's kernels are queued behind the
//! previous one's), and hands the results to the MsmCollector. The partition's device
//! reservation is released when its device memory is free: here, when compute ends, for a
//! backend whose results are on the host; by the collector, after collecting, for one whose
//! results (and running kernels) are still on the device.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::{Pipeline, Timings};

use crate::fault::{catch, scope};
use crate::pipeline::collector::MsmCollector;
use crate::pipeline::messages::{
    Collect, Compute, ComputeDone, Dropped, PartitionDone, StageReports,
};
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::turns::Turns;
use crate::pipeline::work::failed_at;

pub struct ComputeActor {
    pub gpu: usize,
    pub worker: usize,
    pub backend: Arc<dyn Pipeline>,
    /// The per-GPU kernel lock, shared by this GPU's workers, taken in staging order.
    pub turns: Arc<Turns>,
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

    fn handle(&mut self, msg: Compute, _: &mut SyncContext<Self>) {
        let Compute {
            ticket,
            staged,
            seq,
        } = msg;
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
