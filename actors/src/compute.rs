//! ComputeActor (`gpu_workers_per_device` per GPU): runs a staged partition's kernels under the
//! per-GPU kernel turn (taken in staging order, held only until the backend says the partition no
//! longer needs the GPU, so the next partition's kernels run while this one's sums are read
//! back), releases its device reservation the moment compute ends, and hands the results to the
//! MsmCollector.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::backend::Staged;
use cuzk_engine::{Backend, Timings};

use crate::collector::{Collect, MsmCollector};
use crate::dispatcher::{ComputeDone, Dispatcher, Dropped, PartitionDone};
use crate::timeline::{Lane, Timeline};
use crate::turns::Turns;
use crate::work::Ticket;

pub struct ComputeActor {
    pub gpu: usize,
    pub worker: usize,
    pub backend: Arc<dyn Backend>,
    /// The per-GPU kernel lock, shared by this GPU's workers, taken in staging order.
    pub turns: Arc<Turns>,
    pub collector: Addr<MsmCollector>,
    pub dispatcher: Addr<Dispatcher>,
    pub timeline: Timeline,
}

impl Actor for ComputeActor {
    type Context = SyncContext<Self>;
}

pub struct Compute {
    pub ticket: Ticket,
    pub staged: Staged,
    /// Position in this GPU's staging order: the kernel lock is taken in this order.
    pub seq: u64,
}

impl Message for Compute {
    type Result = ();
}

impl Handler<Compute> for ComputeActor {
    type Result = ();

    fn handle(&mut self, msg: Compute, _: &mut SyncContext<Self>) {
        let Compute { ticket, staged, seq } = msg;
        let key = ticket.key;
        let lane = Lane { gpu: Some(self.gpu), worker: Some(self.worker) };
        let wait = Instant::now();
        if ticket.is_cancelled() {
            // Take (and pass on) the turn, so the partitions staged after this one still run.
            drop(self.turns.wait(seq));
            self.dispatcher.do_send(ComputeDone { gpu: self.gpu, key });
            self.dispatcher.do_send(Dropped { key });
            return;
        }
        let result = {
            let mut turn = Some(self.turns.wait(seq));
            let start = Instant::now();
            self.timeline.record(key, "mutex_wait", lane, wait, start, 0);
            let mut t = Timings::default();
            let mut launched_at = None;
            let r = self.backend.compute_then(&ticket.srs, staged, &mut t, &mut || {
                launched_at.get_or_insert_with(Instant::now);
                turn.take();
            });
            drop(turn);
            let end = Instant::now();
            self.timeline.record(key, "launch", lane, start, launched_at.unwrap_or(end), 0);
            self.timeline.record(key, "compute", lane, start, end, 0);
            for (stage, a, b) in t.events {
                self.timeline.record(key, stage, lane, a, b, 0);
            }
            r
        };
        self.dispatcher.do_send(ComputeDone { gpu: self.gpu, key });
        match result {
            Ok(computed) => self.collector.do_send(Collect { ticket, computed }),
            Err(e) => self.dispatcher.do_send(PartitionDone { key, result: Err(e.to_string()) }),
        }
    }
}
