//! The dispatcher's answers about itself: its [`Status`] (jobs, queues, budgets, what is on each
//! GPU, residency, devices out of service), and shutdown: every live job answered, new jobs
//! refused, and the caller told once nothing is in flight any more; and how many jobs use
//! given parameters ([`JobsUsing`], what refuses an evict and GetStatus' `ref_count`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::Sender;
use cuzk_srs::Srs;

use super::Dispatcher;
use crate::pipeline::job::{JobError, JobId};
use crate::pipeline::messages::{GetStatus, Shutdown};
use crate::pipeline::status::{BudgetStatus, JobInfo, Status};

impl Dispatcher {
    /// The status now.
    fn status(&self) -> Status {
        let p = &self.placement;
        Status {
            jobs: self.jobs.len(),
            job_list: self.job_list(),
            queued_synthesis: self.admission.synth_queue.len(),
            queued_dispatch: p.ready.len(),
            in_flight: self.jobs.values().map(|j| j.in_flight.len()).sum(),
            paused: p.paused,
            vram: p.vram.iter().map(BudgetStatus::from).collect(),
            host: (&self.admission.host).into(),
            dispatch_order: p
                .dispatch_log
                .iter()
                .map(|k| (k.job, k.partition))
                .collect(),
            on_gpu: p
                .on_gpu
                .iter()
                .map(|v| v.iter().map(|k| (k.job, k.partition)).collect())
                .collect(),
            resident: p
                .resident
                .iter()
                .map(|r| {
                    r.as_ref()
                        .and_then(|(w, _, _)| w.upgrade())
                        .map(|s| s.path().to_path_buf())
                })
                .collect(),
            out_of_service: self.failover.out_of_service.clone(),
            uploading: p.uploading.clone(),
        }
    }

    /// The live jobs, by id.
    fn job_list(&self) -> Vec<JobInfo> {
        let mut v: Vec<JobInfo> = self
            .jobs
            .iter()
            .map(|(id, j)| JobInfo {
                id: *id,
                priority: j.priority,
                partitions: j.done.len(),
                done: j.done.len() - j.remaining,
                in_flight: j.in_flight.len(),
                cancelled: j.cancelled.load(Ordering::Acquire),
                age_ms: j.submitted.elapsed().as_millis() as u64,
            })
            .collect();
        v.sort_by_key(|j| j.id);
        v
    }

    /// While shutting down: once no partition is in flight, staged or uploading, answers the
    /// [`Shutdown`] (once) with the uploaders.
    pub(super) fn answer_shutdown_once_idle(&mut self) {
        let p = &self.placement;
        let idle = self.jobs.values().all(|j| j.in_flight.is_empty())
            && p.staged.iter().all(|n| *n == 0)
            && !p.uploading.iter().any(|u| *u);
        if idle {
            if let Some(reply) = self.stopping.as_mut().and_then(Option::take) {
                let _ = reply.send(self.placement.uploaders.clone());
            }
        }
    }
}

/// For each of the given parameter handles, the jobs not yet answered (queued or running) that
/// use it: the same handle, or a handle opened from the same file.
#[derive(Message)]
#[rtype(result = "()")]
pub struct JobsUsing {
    pub srs: Vec<Arc<Srs>>,
    pub reply: Sender<Vec<usize>>,
}

impl Handler<JobsUsing> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: JobsUsing, _: &mut Context<Self>) {
        let same = |a: &Arc<Srs>, b: &Arc<Srs>| {
            Arc::ptr_eq(a, b)
                || (a.layout().is_some() && b.layout().is_some() && a.path() == b.path())
        };
        let counts = msg
            .srs
            .iter()
            .map(|s| {
                self.jobs
                    .values()
                    .filter(|j| j.reply.is_some() && same(&j.spec_srs, s))
                    .count()
            })
            .collect();
        let _ = msg.reply.send(counts);
    }
}

impl Handler<GetStatus> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) {
        let _ = msg.0.send(self.status());
    }
}

impl Handler<Shutdown> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) {
        let live: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, st)| st.reply.is_some())
            .map(|(id, _)| *id)
            .collect();
        for job in live {
            self.fail(job, JobError::EngineStopped(job));
        }
        slog::info!(crate::log::component("dispatcher"), "shutting down: jobs answered, waiting for running stages";
            "in_flight" => self.jobs.values().map(|j| j.in_flight.len()).sum::<usize>());
        self.stopping = Some(Some(msg.reply));
        self.pump(ctx);
    }
}
