//! The daemon's job table: every job submitted through its interfaces (the control socket and the
//! gRPC service), watched to its end by a thread of its own so that a client that hangs up never
//! loses its job, kept for a bounded time after it ends (`jobs.retain_s`), then forgotten.
//!
//! A job is found by its engine id (the same number `cuzk ctl` and gRPC show) or by the caller's
//! request id; a second submission with the id of a job that is still live, or that succeeded and
//! is still kept, is given that job instead of proving again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::daemon::metrics::Metrics;
use crate::log;
use crate::pipeline::engine::Engine;
use crate::pipeline::job::{JobError, JobHandle, JobId, JobOutput};
use crate::pipeline::timeline::StageTotals;
use crate::EngineError;

/// How a job ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: Result<JobOutput, JobError>,
    pub ended: Instant,
    /// Per-stage totals of this job's partitions (from the timeline).
    pub stages: StageTotals,
}

impl Outcome {
    pub fn is_success(&self) -> bool {
        self.result.is_ok()
    }
}

/// One tracked job.
pub struct Tracked {
    pub id: JobId,
    /// `porep`, `snap`, `window-post`, `winning-post`, or `example` / a custom kind's name.
    pub kind: String,
    pub request_id: String,
    pub partitions: usize,
    pub submitted: Instant,
    /// Time spent opening the parameters before the job was submitted.
    pub srs_load: Duration,
    slot: Mutex<Option<Arc<Outcome>>>,
    ended: Condvar,
}

impl Tracked {
    /// The outcome, if the job has ended.
    pub fn outcome(&self) -> Option<Arc<Outcome>> {
        self.slot.lock().ok().and_then(|s| s.clone())
    }

    /// Blocks until the job ends or `limit` passes (`None`: no limit).
    pub fn wait(&self, limit: Option<Duration>) -> Option<Arc<Outcome>> {
        let deadline = limit.map(|d| Instant::now() + d);
        let mut g = self.slot.lock().ok()?;
        loop {
            if let Some(o) = g.as_ref() {
                return Some(o.clone());
            }
            g = match deadline {
                None => self.ended.wait(g).ok()?,
                Some(t) => {
                    let now = Instant::now();
                    if now >= t {
                        return None;
                    }
                    self.ended.wait_timeout(g, t - now).ok()?.0
                }
            };
        }
    }

    fn finish(&self, o: Outcome) -> Arc<Outcome> {
        let o = Arc::new(o);
        if let Ok(mut g) = self.slot.lock() {
            *g = Some(o.clone());
        }
        self.ended.notify_all();
        o
    }
}

/// What a submission tells the table besides the engine's handle.
pub struct Submission {
    pub kind: String,
    pub request_id: String,
    pub partitions: usize,
    pub srs_load: Duration,
}

pub struct JobTable {
    engine: Arc<Engine>,
    metrics: Arc<Metrics>,
    jobs: Mutex<HashMap<JobId, Arc<Tracked>>>,
    /// Seconds an ended job is kept (live-changeable).
    retain_s: AtomicU64,
}

impl JobTable {
    pub fn new(engine: Arc<Engine>, metrics: Arc<Metrics>, retain: Duration) -> Arc<JobTable> {
        Arc::new(JobTable {
            engine,
            metrics,
            jobs: Mutex::new(HashMap::new()),
            retain_s: AtomicU64::new(retain.as_secs()),
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn set_retain(&self, d: Duration) {
        self.retain_s.store(d.as_secs(), Ordering::Release);
    }

    pub fn retain(&self) -> Duration {
        Duration::from_secs(self.retain_s.load(Ordering::Acquire))
    }

    /// Takes over `handle`: a thread waits for the job's end, records it (metrics, a log line)
    /// and wakes every waiter.
    pub fn track(self: &Arc<Self>, handle: JobHandle, sub: Submission) -> Arc<Tracked> {
        self.sweep();
        let t = Arc::new(Tracked {
            id: handle.id,
            kind: sub.kind,
            request_id: sub.request_id,
            partitions: sub.partitions,
            submitted: handle.submitted(),
            srs_load: sub.srs_load,
            slot: Mutex::new(None),
            ended: Condvar::new(),
        });
        if let Ok(mut j) = self.jobs.lock() {
            j.insert(t.id, t.clone());
        }
        self.metrics.submitted(&t.kind);
        slog::info!(log::job(t.id, None, &t.kind, None), "job submitted"; "partitions" => t.partitions, "request_id" => t.request_id.clone());
        let (table, tracked) = (self.clone(), t.clone());
        let watcher = std::thread::Builder::new()
            .name(format!("cuzk-job-{}", t.id))
            .stack_size(256 << 10)
            .spawn(move || {
                let result = handle.wait();
                let stages =
                    StageTotals::of(&table.engine.timeline().spans_where(|s| s.job == tracked.id));
                let o = tracked.finish(Outcome {
                    result,
                    ended: Instant::now(),
                    stages,
                });
                table.record_end(&tracked, &o);
            });
        if let Err(e) = watcher {
            // No thread: the job still runs in the engine, but its end would go unseen.
            let o = t.finish(Outcome {
                result: Err(JobError::Rejected {
                    job: t.id,
                    what: format!("no thread to watch the job: {e}"),
                }),
                ended: Instant::now(),
                stages: StageTotals::default(),
            });
            self.engine.cancel(t.id);
            self.record_end(&t, &o);
        }
        t
    }

    fn record_end(&self, t: &Tracked, o: &Outcome) {
        let l = log::job(t.id, None, &t.kind, None);
        match &o.result {
            Ok(out) => {
                self.metrics
                    .ended(&t.kind, "completed", out.wall.as_secs_f64());
                slog::info!(l, "job completed"; "proof_bytes" => out.proofs.len() * 192, "wall_ms" => out.wall.as_millis() as u64,
                    "queue_ms" => out.queue.as_millis() as u64, "synth_ms" => o.stages.synth_ms, "gpu_total_ms" => o.stages.gpu_total_ms);
            }
            Err(JobError::Cancelled(_)) => {
                self.metrics
                    .ended(&t.kind, "cancelled", t.submitted.elapsed().as_secs_f64());
                slog::info!(l, "job cancelled");
            }
            Err(e) => {
                self.metrics
                    .ended(&t.kind, "failed", t.submitted.elapsed().as_secs_f64());
                slog::warn!(l, "job failed: {}", e);
            }
        }
    }

    pub fn get(&self, id: JobId) -> Option<Arc<Tracked>> {
        self.sweep();
        self.jobs.lock().ok()?.get(&id).cloned()
    }

    /// The job a repeated request id refers to: one still live, or one that succeeded and is
    /// still kept (a failed or cancelled one is proved again).
    pub fn by_request(&self, request_id: &str) -> Option<Arc<Tracked>> {
        if request_id.is_empty() {
            return None;
        }
        self.sweep();
        let j = self.jobs.lock().ok()?;
        j.values()
            .filter(|t| t.request_id == request_id && t.outcome().is_none_or(|o| o.is_success()))
            .max_by_key(|t| t.id)
            .cloned()
    }

    /// Every tracked job (live and kept), oldest first.
    pub fn all(&self) -> Vec<Arc<Tracked>> {
        self.sweep();
        let mut v: Vec<_> = self
            .jobs
            .lock()
            .map(|j| j.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by_key(|t| t.id);
        v
    }

    /// Jobs that have not ended.
    pub fn live(&self) -> Vec<Arc<Tracked>> {
        self.all()
            .into_iter()
            .filter(|t| t.outcome().is_none())
            .collect()
    }

    /// Cancels a live job: `Ok(true)` if it was running and is now cancelled, `Ok(false)` if it
    /// had already ended, [`EngineError::UnknownJob`] if no such job is known.
    pub fn cancel(&self, id: JobId) -> Result<bool, EngineError> {
        match self.get(id) {
            Some(t) if t.outcome().is_some() => Ok(false),
            Some(t) => {
                let was = self.engine.cancel(id);
                // The watcher records the end; wait for it so the caller sees the job ended.
                t.wait(Some(Duration::from_secs(5)));
                Ok(was)
            }
            None if self.engine.cancel(id) => Ok(true),
            None => Err(EngineError::UnknownJob {
                job: id,
                retain_s: self.retain().as_secs(),
            }),
        }
    }

    /// Forgets jobs that ended longer ago than the retention time.
    pub fn sweep(&self) {
        let retain = self.retain();
        if let Ok(mut j) = self.jobs.lock() {
            j.retain(|_, t| t.outcome().is_none_or(|o| o.ended.elapsed() <= retain));
        }
    }
}
