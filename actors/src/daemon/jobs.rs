//! The daemon's job table: every job submitted through its interfaces (the control socket and the
//! gRPC service), watched to its end by a thread of its own so that a client that hangs up never
//! loses its job, kept for a bounded time after it ends (`jobs.retain_s`), then forgotten.
//!
//! A job is found by its engine id (the same number `cuzk ctl` and gRPC show) or by the caller's
//! request id; a second submission with the id of a job that is still live, or that succeeded and
//! is still kept, is given that job instead of proving again.
//!
//! Ids shown to clients ([`Tracked::job_id`]) are `<run>-<n>`: `n` the engine's number, `run` eight
//! hex digits drawn when this table is made (once per daemon start), so that an id from before a
//! restart is never another job's: [`JobTable::resolve`] answers it as from an earlier run.

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
    /// The id clients see: `<run>-<id>` ([`JobTable::public_id`]).
    pub job_id: String,
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

/// Why a client's job id names no job of this table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdError {
    /// Not a job id at all (the text says what one looks like).
    Malformed(String),
    /// Well formed, but no job of this run has it: never issued, or from an earlier run (the text
    /// says which, and when the daemon restarted).
    NotFound(String),
}

impl std::fmt::Display for IdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdError::Malformed(m) | IdError::NotFound(m) => f.write_str(m),
        }
    }
}

/// This run of the daemon: the prefix of its job ids and when it started.
#[derive(Debug, Clone)]
pub struct Run {
    /// Eight hex digits, drawn at start.
    pub epoch: String,
    /// Seconds since the Unix epoch when it started.
    pub started_unix: u64,
}

impl Run {
    /// A new run: the start time, and an epoch drawn from it (nanoseconds) and the process id.
    pub fn new() -> Run {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // splitmix64 of the time and pid: distinct runs get distinct epochs w.h.p.
        let mut z = (now.as_nanos() as u64) ^ (u64::from(std::process::id()) << 40);
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Run {
            epoch: format!("{:08x}", z as u32),
            started_unix: now.as_secs(),
        }
    }

    /// The start as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
    pub fn started(&self) -> String {
        let (days, secs) = (self.started_unix / 86400, self.started_unix % 86400);
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }

    /// The id clients see for engine job `id`.
    pub fn public_id(&self, id: JobId) -> String {
        format!("{}-{id}", self.epoch)
    }

    /// The engine job a client's id names in this run; why none, otherwise.
    pub fn resolve(&self, s: &str) -> Result<JobId, IdError> {
        let s = s.trim();
        let shape = || {
            IdError::Malformed(format!(
                "job_id `{s}` is not a job id of this daemon (they look like `{}-<n>`)",
                self.epoch
            ))
        };
        if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
            // A bare number: never issued in this form.
            return Err(IdError::NotFound(format!(
                "job {s} is unknown: this daemon's job ids look like `{}-<n>`",
                self.epoch
            )));
        }
        let (epoch, n) = s.split_once('-').ok_or_else(shape)?;
        let n: JobId = n.parse().map_err(|_| shape())?;
        if epoch.len() != 8 || !epoch.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(shape());
        }
        if !epoch.eq_ignore_ascii_case(&self.epoch) {
            return Err(IdError::NotFound(format!(
                "job {s} is from an earlier run of this daemon (it restarted at {}; this run's ids start `{}-`); its result is gone",
                self.started(),
                self.epoch
            )));
        }
        Ok(n)
    }
}

impl Default for Run {
    fn default() -> Run {
        Run::new()
    }
}

pub struct JobTable {
    engine: Arc<Engine>,
    metrics: Arc<Metrics>,
    jobs: Mutex<HashMap<JobId, Arc<Tracked>>>,
    /// Seconds an ended job is kept (live-changeable).
    retain_s: AtomicU64,
    run: Run,
}

impl JobTable {
    pub fn new(engine: Arc<Engine>, metrics: Arc<Metrics>, retain: Duration) -> Arc<JobTable> {
        Arc::new(JobTable {
            engine,
            metrics,
            jobs: Mutex::new(HashMap::new()),
            retain_s: AtomicU64::new(retain.as_secs()),
            run: Run::new(),
        })
    }

    /// This run of the daemon (the prefix of its job ids, its start).
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The id clients see for engine job `id`.
    pub fn public_id(&self, id: JobId) -> String {
        self.run.public_id(id)
    }

    /// The engine job a client's id names, if it is of this run ([`Run::resolve`]).
    pub fn resolve(&self, s: &str) -> Result<JobId, IdError> {
        self.run.resolve(s)
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
            job_id: self.run.public_id(handle.id),
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
        slog::info!(log::job(t.id, None, &t.kind, None), "job submitted"; "job_id" => t.job_id.clone(), "partitions" => t.partitions, "request_id" => t.request_id.clone());
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

#[cfg(test)]
mod tests {
    use super::{IdError, Run};

    #[test]
    fn an_id_from_another_run_is_not_found_and_names_the_restart() {
        let run = Run {
            epoch: "0a1b2c3d".into(),
            started_unix: 1_712_345_678,
        };
        assert_eq!(run.public_id(7), "0a1b2c3d-7");
        assert_eq!(run.resolve("0a1b2c3d-7"), Ok(7));
        assert_eq!(run.resolve(" 0A1B2C3D-7 "), Ok(7));
        match run.resolve("ffffffff-7") {
            Err(IdError::NotFound(m)) => assert!(
                m.contains("ffffffff-7")
                    && m.contains("restarted at 2024-04-05T19:34:38Z")
                    && m.contains("0a1b2c3d-"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        // Never issued: plain not found; not an id at all: malformed.
        assert!(
            matches!(run.resolve("999"), Err(IdError::NotFound(m)) if m.contains("999") && !m.contains("restart"))
        );
        for bad in ["x1", "", "0a1b2c3d-", "0a1b2c3d-x", "abc-1", "0a1b2c3dd-1"] {
            assert!(
                matches!(run.resolve(bad), Err(IdError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn two_runs_draw_different_epochs() {
        let a = Run::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = Run::new();
        assert_ne!(a.epoch, b.epoch);
        assert_eq!(a.epoch.len(), 8);
    }
}
