//! The stages' reports: what a partition leaving the uploader (`UploadDone`: its host
//! reservation, unless a copy is kept for a retry), a GPU's compute (`ComputeDone`: its VRAM
//! reservation and slot), or the pipeline altogether (`Dropped`, `PartitionDone`: everything it
//! held; its proof, or its job's failure, or a retry on another device) gives back.

use actix::prelude::*;

use super::Dispatcher;
use crate::pipeline::job::JobError;
use crate::pipeline::messages::{ComputeDone, Dropped, PartitionDone, UploadDone};
use crate::pipeline::work::PartKey;

impl Handler<UploadDone> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: UploadDone, ctx: &mut Context<Self>) {
        self.placement.uploading[msg.gpu] = false;
        if let Some(f) = self
            .jobs
            .get_mut(&msg.key.job)
            .and_then(|st| st.in_flight.get_mut(&msg.key.partition))
        {
            // A partition whose copy is kept for a retry keeps its host reservation.
            if f.copy.is_none() {
                if let Some(h) = f.host.take() {
                    self.admission.host.release(h);
                }
            }
        }
        self.pump(ctx);
    }
}

impl Handler<ComputeDone> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: ComputeDone, ctx: &mut Context<Self>) {
        let p = &mut self.placement;
        p.staged[msg.gpu] = p.staged[msg.gpu].saturating_sub(1);
        p.on_gpu[msg.gpu].retain(|k| *k != msg.key);
        if let Some(f) = self
            .jobs
            .get_mut(&msg.key.job)
            .and_then(|st| st.in_flight.get_mut(&msg.key.partition))
        {
            if let Some((gpu, v)) = f.vram.take() {
                p.vram[gpu].release(v);
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
        let failure = msg.result.as_ref().err().map(String::as_str);
        if self.device_outcome(msg.key, failure, msg.device_fault) {
            // Retried on another device.
            self.pump(ctx);
            return;
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
            Ok(done) => self.partition_proved(msg.key, done),
        }
        self.forget_if_idle(job);
        self.pump(ctx);
    }
}
