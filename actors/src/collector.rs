//! MsmCollector (one per GPU): brings a partition's MSM results to the host (a GPU backend waits
//! for the partition's kernels, copies the sums device→host on a stream of its own and does the
//! final reductions), releases the partition's device reservation when the backend held device
//! memory until then, assembles the proof with `r, s`, and verifies it. It runs beside compute,
//! so partition k is collected while partition k+1's kernels run.

use std::sync::{Arc, Weak};
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::backend::Computed;
use cuzk_engine::prover::assemble;
use cuzk_engine::{Backend, Timings, Verifier};
use cuzk_srs::Srs;

use crate::dispatcher::{ComputeDone, Dispatcher, Dropped, PartitionDone};
use crate::timeline::{Lane, Timeline};
use crate::work::Ticket;

pub struct MsmCollector {
    pub gpu: usize,
    pub backend: Arc<dyn Backend>,
    pub self_verify: bool,
    pub dispatcher: Addr<Dispatcher>,
    pub timeline: Timeline,
    /// The prepared verifying key of the last SRS seen (the partitions of a batch share one).
    pub verifier: Option<(Weak<Srs>, Arc<Verifier>)>,
}

impl MsmCollector {
    pub fn new(
        gpu: usize,
        backend: Arc<dyn Backend>,
        self_verify: bool,
        dispatcher: Addr<Dispatcher>,
        timeline: Timeline,
    ) -> Self {
        MsmCollector {
            gpu,
            backend,
            self_verify,
            dispatcher,
            timeline,
            verifier: None,
        }
    }

    /// The verifier of `srs`, prepared once per parameter set rather than once per partition.
    fn verifier(&mut self, srs: &Arc<Srs>) -> Arc<Verifier> {
        if let Some((weak, v)) = &self.verifier {
            if weak.upgrade().is_some_and(|s| Arc::ptr_eq(&s, srs)) {
                return v.clone();
            }
        }
        let v = Arc::new(Verifier::new(srs.vk()));
        self.verifier = Some((Arc::downgrade(srs), v.clone()));
        v
    }
}

impl Actor for MsmCollector {
    type Context = SyncContext<Self>;
}

pub struct Collect {
    pub ticket: Ticket,
    pub computed: Computed,
}

impl Message for Collect {
    type Result = ();
}

impl Handler<Collect> for MsmCollector {
    type Result = ();

    fn handle(&mut self, msg: Collect, _: &mut SyncContext<Self>) {
        let Collect { ticket, computed } = msg;
        let key = ticket.key;
        let lane = Lane {
            gpu: Some(self.gpu),
            worker: None,
        };
        let holds_device = computed.holds_device;
        // The partition's device memory is free once `computed` is gone (dropping a GPU payload
        // waits for its kernels): then its reservation goes back.
        let gpu = self.gpu;
        let device_free = |d: &Addr<Dispatcher>| {
            if holds_device {
                d.do_send(ComputeDone { gpu, key });
            }
        };
        if ticket.is_cancelled() {
            drop(computed);
            device_free(&self.dispatcher);
            self.dispatcher.do_send(Dropped { key });
            return;
        }
        let inputs = computed.public_inputs.clone();
        let verifier = self.self_verify.then(|| self.verifier(&ticket.srs));
        let start = Instant::now();
        let mut t = Timings::default();
        let collected = self.backend.collect(computed, &mut t);
        device_free(&self.dispatcher);
        for (stage, a, b) in t.events {
            // Device-timed steps (the kernels as the GPU ran them), on the GPU's kernel lane.
            let lane = if stage == "dtoh" {
                lane
            } else {
                Lane {
                    gpu: Some(self.gpu),
                    worker: Some(0),
                }
            };
            self.timeline.record(key, stage, lane, a, b, 0);
        }
        let result = collected.map_err(|e| e.to_string()).and_then(|sums| {
            let collected = Instant::now();
            self.timeline
                .record(key, "collect", lane, start, collected, 0);
            let proof =
                assemble(&sums, ticket.srs.vk(), ticket.r, ticket.s).map_err(|e| e.to_string())?;
            let assembled = Instant::now();
            self.timeline
                .record(key, "assemble", lane, collected, assembled, 0);
            if let Some(verifier) = &verifier {
                let ok = verifier
                    .verify(&proof, &inputs)
                    .map_err(|e| e.to_string())?;
                self.timeline
                    .record(key, "verify", lane, assembled, Instant::now(), 0);
                if !ok {
                    return Err("proof failed self-verification".to_string());
                }
            }
            Ok((proof, inputs))
        });
        self.dispatcher.do_send(PartitionDone { key, result });
    }
}
