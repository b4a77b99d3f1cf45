//! One partition's synthesis as it runs on a synthesis worker (`synth_workers`): the circuit
//! synthesized and its inputs prepared for the prover, under the fault plan's synthesis site and
//! with panics caught (on the pool one would abort the process), a `synth` span recorded, and the
//! outcome sent to the dispatcher.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::prover::{prepare, ProveOptions};
use cuzk_engine::synth::Shape;
use cuzk_srs::Srs;

use crate::fault::{Faults, Site, Stage};
use crate::pipeline::job::SynthFn;
use crate::pipeline::messages::{Dropped, Synthesized};
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::work::PartKey;

/// One partition's synthesis, as it runs on the synthesis pool.
pub struct SynthesisRun {
    pub key: PartKey,
    pub synth: SynthFn,
    pub srs: Arc<Srs>,
    pub opts: ProveOptions,
    /// Whether the recording's periodic full check falls on this partition, where the
    /// dispatcher decided it (`cuzk_engine::recorded::with_check`).
    pub check: Option<bool>,
    pub cancelled: Arc<AtomicBool>,
    pub faults: Faults,
    pub timeline: Timeline,
    /// The dispatcher, told the partition's outcome.
    pub synthesized: Recipient<Synthesized>,
    /// The dispatcher, told the partition was dropped (its job cancelled before it began).
    pub dropped: Recipient<Dropped>,
}

impl SynthesisRun {
    /// Synthesizes and prepares the partition and tells the dispatcher (`Dropped` if its job was
    /// cancelled before it began).
    pub fn run(self) {
        let SynthesisRun {
            key,
            synth,
            srs,
            opts,
            check,
            cancelled,
            faults,
            timeline,
            synthesized,
            dropped,
        } = self;
        if cancelled.load(Ordering::Acquire) {
            dropped.do_send(Dropped { key });
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
            faults.hit(Site {
                stage: Stage::Synthesis,
                key: Some(key),
                device: None,
            })?;
            match check {
                Some(c) => cuzk_engine::recorded::with_check(c, || synth(hint)),
                None => synth(hint),
            }
            .and_then(|asg| prepare(key.partition, asg, &srs, &opts))
            .map_err(|e| e.to_string())
        })
        .map_err(|e| format!("synthesis: {e}"));
        let end = Instant::now();
        timeline.record(key, "synth", Lane::default(), start, end, 0);
        synthesized.do_send(Synthesized {
            key,
            result,
            at: end,
        });
    }
}
