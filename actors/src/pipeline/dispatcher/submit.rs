//! A job's submission: its id (answered at once), the checks that reject it (shutting down, no
//! partitions, a fixed randomness of the wrong length), its `(r, s)` pairs, its entry in the job
//! table, and its partitions queued for synthesis in priority order.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use blstrs::Scalar;
use ff::Field;

use super::{Dispatcher, JobState};
use crate::pipeline::job::{JobError, JobSpec, Randomness};
use crate::pipeline::messages::Submit;

impl Handler<Submit> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Submit, ctx: &mut Context<Self>) {
        let id = self.next_job;
        self.next_job += 1;
        let _ = msg.id.send(id);
        if self.stopping.is_some() {
            let what = "the engine is shutting down".to_string();
            let _ = msg.reply.send(Err(JobError::Rejected { job: id, what }));
            return;
        }
        let JobSpec {
            srs,
            partitions,
            synthesis,
            priority,
            randomness,
            kind,
            deadline,
        } = msg.spec;
        let count = partitions.len();
        let rs = match randomness {
            Randomness::Fixed(v) if v.len() == count => v,
            Randomness::Fixed(v) => {
                let what = format!("{count} partitions but {} (r, s) pairs", v.len());
                let _ = msg.reply.send(Err(JobError::Rejected { job: id, what }));
                return;
            }
            Randomness::Random => {
                let mut rng = rand::thread_rng();
                (0..count)
                    .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
                    .collect()
            }
        };
        if count == 0 {
            let _ = msg.reply.send(Err(JobError::Rejected {
                job: id,
                what: "no partitions".into(),
            }));
            return;
        }
        for p in 0..count {
            self.admission
                .synth_queue
                .insert((Reverse(priority), id, p));
        }
        self.jobs.insert(
            id,
            JobState {
                spec_srs: srs,
                synthesis,
                kind,
                priority,
                deadline,
                synths: partitions.into_iter().map(Some).collect(),
                rs,
                done: (0..count).map(|_| None).collect(),
                remaining: count,
                cancelled: Arc::new(AtomicBool::new(false)),
                reply: Some(msg.reply),
                submitted: Instant::now(),
                first_synth: None,
                first_upload: None,
                in_flight: HashMap::new(),
                ready: HashMap::new(),
            },
        );
        self.pump(ctx);
    }
}
