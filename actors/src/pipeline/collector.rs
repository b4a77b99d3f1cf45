//! MsmCollector (one per GPU): brings a partition's MSM results to the host (a GPU backend waits
//! for the partition's kernels, copies the sums device→host on a stream of its own and does the
//! final reductions), releases the partition's device reservation when the backend held device
//! memory until then, assembles the proof with `r, s`, and verifies it. It runs beside compute,
//! so partition k is collected while partition k+1's kernels run.

use std::sync::{Arc, Weak};
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::prover::assemble;
use cuzk_engine::{Pipeline, Timings, Verifier};
use cuzk_srs::Srs;

use crate::fault::{catch, scope, Faults, Site, Stage};
use crate::pipeline::messages::{Collect, ComputeDone, Dropped, PartitionDone, StageReports};
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::work::failed_at;

pub struct MsmCollector {
    pub gpu: usize,
    pub backend: Arc<dyn Pipeline>,
    pub self_verify: bool,
    /// The dispatcher, told when a partition's device memory is free and when it leaves.
    pub reports: StageReports,
    pub timeline: Timeline,
    /// The prepared verifying key of the last SRS seen (the partitions of a batch share one).
    pub verifier: Option<(Weak<Srs>, Arc<Verifier>)>,
    /// The fault plan (tests; inert without the `faults` feature).
    pub faults: Faults,
}

impl MsmCollector {
    pub fn new(
        gpu: usize,
        backend: Arc<dyn Pipeline>,
        self_verify: bool,
        reports: StageReports,
        timeline: Timeline,
    ) -> Self {
        MsmCollector {
            gpu,
            backend,
            self_verify,
            reports,
            timeline,
            verifier: None,
            faults: Faults::default(),
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
        let device_free = |d: &Recipient<ComputeDone>| {
            if holds_device {
                d.do_send(ComputeDone { gpu, key });
            }
        };
        if ticket.is_cancelled() {
            drop(computed);
            device_free(&self.reports.compute_done);
            self.reports.dropped.do_send(Dropped { key });
            return;
        }
        let inputs = computed.public_inputs.clone();
        let verifier = self.self_verify.then(|| self.verifier(&ticket.srs));
        let start = Instant::now();
        let mut t = Timings::default();
        let backend = &self.backend;
        let collected = catch("collect", || {
            scope(key, || backend.collect(computed, &mut t)).map_err(|e| e.to_string())
        });
        device_free(&self.reports.compute_done);
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
        let (gpu, name) = (self.gpu, self.backend.name().to_string());
        let at = |stage: &str, device: bool, e: String| {
            (failed_at(stage, gpu, &name, e), device.then_some(gpu))
        };
        let site = |stage| Site {
            stage,
            key: Some(key),
            device: Some(gpu),
        };
        let faults = &self.faults;
        let timeline = &self.timeline;
        let result = collected
            .map_err(|e| at("collect", true, e))
            .and_then(|sums| {
                let collected = Instant::now();
                timeline.record(key, "collect", lane, start, collected, 0);
                let proof = catch("assemble", || {
                    faults.hit(site(Stage::Assemble))?;
                    assemble(&sums, ticket.srs.vk(), ticket.r, ticket.s).map_err(|e| e.to_string())
                })
                .map_err(|e| at("assemble", false, e))?;
                let assembled = Instant::now();
                timeline.record(key, "assemble", lane, collected, assembled, 0);
                if let Some(verifier) = &verifier {
                    let ok = catch("verify", || {
                        faults.hit(site(Stage::Verify))?;
                        let ok = verifier
                            .verify(&proof, &inputs)
                            .map_err(|e| e.to_string())?;
                        Ok(ok && !faults.corrupt(site(Stage::Verify)))
                    })
                    .map_err(|e| at("verify", true, e))?;
                    timeline.record(key, "verify", lane, assembled, Instant::now(), 0);
                    if !ok {
                        return Err(at("verify", true, "proof failed self-verification".into()));
                    }
                }
                Ok((proof, inputs))
            });
        let (result, device_fault) = match result {
            Ok(done) => (Ok(done), None),
            Err((what, device)) => (Err(what), device),
        };
        self.reports.partition_done.do_send(PartitionDone {
            key,
            result,
            device_fault,
        });
    }
}
