//! The service itself: each RPC of `cuzk.v1.ProvingEngine` answered from the daemon's job table
//! and engine (submission with a request id that finds a job already made, waiting that survives
//! a client hanging up, status, metrics, parameter preload and evict), and the gRPC status each
//! error maps to: an [`EngineError`] (a Filecoin request's errors among them) in [`status_of`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_filecoin::{params, FilecoinError, Registered};
use tonic::{Request, Response, Status};

use super::verification::{verifiable, Checks, Verdict};
use crate::daemon::jobs::{IdError, JobTable, Outcome, Submission, Tracked};
use crate::daemon::metrics::{Readiness, State};
use crate::filecoin::job_spec;
use crate::log;
use crate::EngineError;

use super::pb::proving_engine_server::ProvingEngine;
use super::{curio, pb, GrpcOptions};

struct Inner {
    /// Set once the engine can prove ([`Service::attach`]).
    jobs: std::sync::OnceLock<Arc<JobTable>>,
    opts: GrpcOptions,
    ready: Readiness,
    /// Parameter file → the circuit id it was asked for by.
    circuits: Mutex<HashMap<PathBuf, String>>,
    /// One submission at a time per request id, so that two concurrent calls with the same id
    /// make one job.
    submitting: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// filecoin-proofs' verifier on the proofs of the jobs whose requests carry what it needs.
    checks: Checks,
}

/// The service behind both listeners.
#[derive(Clone)]
pub struct Service(Arc<Inner>);

impl Service {
    /// How it runs.
    pub(super) fn options(&self) -> &GrpcOptions {
        &self.0.opts
    }
}

/// The status a failed call answers with: `e`'s code, and its text after `about` where the call
/// names what it was about. The one place an [`EngineError`] becomes a gRPC status: a request
/// refused as given or a setting is `INVALID_ARGUMENT`; an unknown job `NOT_FOUND`; a parameter
/// file `FAILED_PRECONDITION` where the file is there (it could not be loaded, or an evict was
/// refused while a queued or running job uses it), `NOT_FOUND` where it is not; an engine stopped or busy
/// `UNAVAILABLE`; the devices, a socket or thread, the backends `INTERNAL`; a Filecoin request as
/// [`filecoin_code`] says.
fn status_of(e: &EngineError, about: Option<&str>) -> Status {
    use tonic::Code;
    let code = match e {
        EngineError::Config { .. } | EngineError::Rejected(_) => Code::InvalidArgument,
        EngineError::UnknownJob { .. } => Code::NotFound,
        EngineError::Srs { path, .. } if path.exists() => Code::FailedPrecondition,
        EngineError::Srs { .. } => Code::NotFound,
        EngineError::Stopped(_) | EngineError::Busy(_) => Code::Unavailable,
        EngineError::Devices(_)
        | EngineError::Start(_)
        | EngineError::Io { .. }
        | EngineError::Engine(_) => Code::Internal,
        EngineError::Filecoin(f) => filecoin_code(f),
    };
    match about {
        Some(about) => Status::new(code, format!("{about}: {e}")),
        None => Status::new(code, e.to_string()),
    }
}

/// The code of a Filecoin request's error: malformed or invalid input `INVALID_ARGUMENT`, a
/// missing parameter file `NOT_FOUND`, one that cannot be used `FAILED_PRECONDITION`.
fn filecoin_code(e: &FilecoinError) -> tonic::Code {
    match e {
        FilecoinError::Malformed { .. }
        | FilecoinError::Invalid { .. }
        | FilecoinError::SectorSize(_)
        | FilecoinError::Proofs { .. } => tonic::Code::InvalidArgument,
        FilecoinError::MissingParams { .. } => tonic::Code::NotFound,
        FilecoinError::Params { .. } => tonic::Code::FailedPrecondition,
        FilecoinError::Engine(_) => tonic::Code::InvalidArgument,
    }
}

/// The engine job a client's id names: `INVALID_ARGUMENT` for what is no job id, `NOT_FOUND` for
/// one never issued or from an earlier run of the daemon (the message names the restart).
fn job_id(jobs: &JobTable, s: &str) -> Result<u64, Status> {
    jobs.resolve(s).map_err(|e| match e {
        IdError::Malformed(m) => Status::invalid_argument(m),
        IdError::NotFound(m) => Status::not_found(m),
    })
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// An `AwaitProofResponse` for a job that ended, and what filecoin-proofs' verifier said of its
/// proof (`None`: not verified): a proof it rejects is FAILED.
fn response_of(t: &Tracked, o: &Outcome, verdict: Option<Verdict>) -> pb::AwaitProofResponse {
    use pb::await_proof_response::Status as S;
    let mut r = pb::AwaitProofResponse {
        job_id: t.job_id.clone(),
        srs_load_ms: ms(t.srs_load),
        synthesis_ms: o.stages.synth_ms as u64,
        gpu_compute_ms: o.stages.gpu_total_ms as u64,
        ..Default::default()
    };
    match &o.result {
        Ok(out) => {
            r.queue_wait_ms = ms(out.queue);
            r.total_ms = ms(out.wall + t.srs_load);
            r.missed_deadline_by_ms = out.missed_deadline_by.map_or(0, |d| ms(d).max(1));
            match verdict {
                Some(Verdict::Invalid(why)) => {
                    r.status = S::Failed as i32;
                    r.error_message = why;
                }
                v => {
                    r.status = S::Completed as i32;
                    r.proof = out.to_bytes();
                    if let Some(Verdict::Valid(name)) = v {
                        r.verified_by = name.into();
                    }
                }
            }
        }
        Err(e) => {
            r.status = if matches!(e, crate::pipeline::job::JobError::Cancelled(_)) {
                S::Cancelled as i32
            } else {
                S::Failed as i32
            };
            r.error_message = e.to_string();
            r.total_ms = ms(o.ended.saturating_duration_since(t.submitted) + t.srs_load);
        }
    }
    r
}

/// Cancels the job when dropped before `done` (a client that hung up), if configured to.
struct DisconnectGuard {
    jobs: Arc<JobTable>,
    job: u64,
    cancel: bool,
    done: bool,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let l = log::job(self.job, None, "", None);
        if self.cancel {
            slog::info!(
                l,
                "client hung up while waiting: cancelling the job (grpc.cancel_on_disconnect)"
            );
            let _ = self.jobs.cancel(self.job);
        } else {
            slog::info!(
                l,
                "client hung up while waiting: the job goes on and is kept for jobs.retain_s"
            );
        }
    }
}

impl Service {
    /// A service whose engine is still starting: it answers `GetStatus` (state `starting`) and
    /// `UNAVAILABLE` to the rest until [`attach`](Self::attach).
    pub fn new(opts: GrpcOptions, ready: Readiness) -> Service {
        Service(Arc::new(Inner {
            jobs: std::sync::OnceLock::new(),
            opts,
            ready,
            circuits: Mutex::new(HashMap::new()),
            submitting: Mutex::new(HashMap::new()),
            checks: Checks::default(),
        }))
    }

    /// Hands the service the daemon's job table (and so its engine).
    pub fn attach(&self, jobs: Arc<JobTable>) {
        let _ = self.0.jobs.set(jobs);
    }

    fn jobs(&self) -> Result<&Arc<JobTable>, Status> {
        self.0.jobs.get().ok_or_else(|| {
            Status::unavailable(
                "starting: the engine cannot prove yet (opening devices, compiling kernels)",
            )
        })
    }

    fn engine(&self) -> Result<&Arc<crate::Engine>, Status> {
        self.jobs().map(|j| j.engine())
    }

    fn accepting(&self) -> Result<(), Status> {
        match self.0.ready.get() {
            State::Ready => Ok(()),
            State::Starting => Err(Status::unavailable("starting: the engine cannot prove yet")),
            State::Draining => Err(Status::unavailable(
                "draining: the daemon is stopping once its jobs in flight end; no new work is accepted",
            )),
        }
    }

    fn remember(&self, path: &Path, reg: Registered) {
        if let Ok(mut c) = self.0.circuits.lock() {
            c.insert(path.to_path_buf(), curio::circuit_id(reg));
        }
    }

    /// Submits (or finds, for a repeated request id) the job of `req`.
    async fn submit(&self, req: pb::SubmitProofRequest) -> Result<Arc<Tracked>, Status> {
        self.accepting()?;
        let turn = match req.request_id.as_str() {
            "" => None,
            id => {
                let m = self
                    .0
                    .submitting
                    .lock()
                    .map_err(|_| Status::internal("submission lock poisoned"))?
                    .entry(id.to_string())
                    .or_default()
                    .clone();
                Some(m.lock_owned().await)
            }
        };
        let id = req.request_id.clone();
        let r = self.submit_once(req).await;
        if let (Some(turn), Ok(mut s)) = (turn, self.0.submitting.lock()) {
            // Only the map's handle and this turn's: nobody else is waiting on this id.
            if s.get(&id).is_some_and(|m| Arc::strong_count(m) <= 2) {
                s.remove(&id);
            }
            drop(turn);
        }
        r
    }

    async fn submit_once(&self, req: pb::SubmitProofRequest) -> Result<Arc<Tracked>, Status> {
        if let Some(t) = self.jobs()?.by_request(&req.request_id) {
            return Ok(t);
        }
        let (proof, named) =
            curio::to_proof_request(&req).map_err(|e| Status::invalid_argument(e.0))?;
        let svc = self.clone();
        let request_id = req.request_id.clone();
        let prio = req.priority;
        // Counted from now: what loading the parameters takes comes out of it.
        let deadline =
            (req.deadline_ms > 0).then(|| (Instant::now(), Duration::from_millis(req.deadline_ms)));
        tokio::task::spawn_blocking(move || {
            svc.submit_blocking(proof, named, prio, request_id, deadline)
        })
        .await
        .map_err(|e| Status::internal(format!("submission task: {e}")))?
    }

    fn submit_blocking(
        &self,
        proof: cuzk_filecoin::ProofRequest,
        named: Registered,
        prio: i32,
        request_id: String,
        deadline: Option<(Instant, Duration)>,
    ) -> Result<Arc<Tracked>, Status> {
        let fail = |e: FilecoinError| status_of(&e.into(), None);
        let kind = proof.kind();
        let parsed = proof.parse().map_err(fail)?;
        let reg = parsed.registered();
        if reg != named {
            return Err(Status::invalid_argument(format!(
                "registered_proof {} ({named}) but the C1 output is for {reg} (abi {})",
                named.abi(),
                reg.abi()
            )));
        }
        let cfg = &self.0.opts.filecoin;
        let path = params::locate(reg, &params::dir(cfg.params_dir.as_deref())).map_err(fail)?;
        let start = Instant::now();
        let srs = self
            .engine()?
            .load_srs(&path)
            .map_err(|e| status_of(&e, Some(&format!("parameters {}", path.display()))))?;
        let srs_load = start.elapsed();
        self.remember(&path, reg);
        let priority = curio::priority(prio, (cfg.priority)(kind));
        let check = verifiable(&parsed).then(|| parsed.clone());
        let spec = job_spec(parsed, srs, priority)
            .map_err(fail)?
            .deadline(deadline.map(|(from, d)| d.saturating_sub(from.elapsed())));
        let partitions = spec.partitions.len();
        let handle = self
            .engine()?
            .submit(spec)
            .map_err(|e| status_of(&e, None))?;
        let t = self.jobs()?.track(
            handle,
            Submission {
                kind: kind.name().into(),
                request_id,
                partitions,
                srs_load,
            },
        );
        if let Some(parsed) = check {
            self.0.checks.expect(self.jobs()?, t.id, parsed);
        }
        Ok(t)
    }

    /// The answer for `t`, which ended with `o`: its proof checked by filecoin-proofs' verifier
    /// first, where its request carries what that needs (once per job, off the async threads).
    async fn answer(
        &self,
        t: Arc<Tracked>,
        o: Arc<Outcome>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let svc = self.clone();
        tokio::task::spawn_blocking(move || {
            let verdict = match (&o.result, svc.jobs()) {
                (Ok(out), Ok(jobs)) => svc.0.checks.verdict(jobs, t.id, out),
                _ => None,
            };
            response_of(&t, &o, verdict)
        })
        .await
        .map_err(|e| Status::internal(format!("verification task: {e}")))
    }

    /// Waits for `t` (at most `limit`), keeping the job if the client hangs up.
    async fn wait(
        &self,
        t: Arc<Tracked>,
        limit: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        if let Some(o) = t.outcome() {
            return self.answer(t, o).await;
        }
        let mut guard = DisconnectGuard {
            jobs: self.jobs()?.clone(),
            job: t.id,
            cancel: self.0.opts.cancel_on_disconnect.load(Ordering::Acquire),
            done: false,
        };
        let waiter = t.clone();
        let got = tokio::task::spawn_blocking(move || waiter.wait(limit))
            .await
            .map_err(|e| Status::internal(format!("wait task: {e}")))?;
        guard.done = true;
        Ok(match got {
            Some(o) => self.answer(t, o).await?,
            None => pb::AwaitProofResponse {
                job_id: t.job_id.clone(),
                status: pb::await_proof_response::Status::Timeout as i32,
                error_message: format!(
                    "job {} still running after {} ms; it goes on (await it again)",
                    t.job_id,
                    limit.map(ms).unwrap_or(0)
                ),
                ..Default::default()
            },
        })
    }

    fn circuit_path(&self, id: &str) -> Result<(PathBuf, Option<Registered>), Status> {
        if id.ends_with(".params") || id.contains('/') {
            return Ok((PathBuf::from(id), None));
        }
        let reg = curio::parse_circuit_id(id).map_err(|e| Status::invalid_argument(e.0))?;
        let cfg = &self.0.opts.filecoin;
        let path = params::locate(reg, &params::dir(cfg.params_dir.as_deref()))
            .map_err(|e| Status::not_found(format!("circuit id `{id}`: {e}")))?;
        Ok((path, Some(reg)))
    }

    fn status_now(&self) -> Result<pb::GetStatusResponse, Status> {
        let e = self.engine()?;
        let st = e.status().map_err(|e| status_of(&e, None))?;
        let (pinned, _) = e.pinned().map_err(|e| status_of(&e, None))?;
        let loaded = e.loaded_srs().map_err(|e| status_of(&e, None))?;
        let tracked = self.jobs()?.all();
        let kind_of = |job: u64| {
            tracked
                .iter()
                .find(|t| t.id == job)
                .map(|t| t.kind.clone())
                .unwrap_or_default()
        };
        let unlimited = |c: u64| {
            if c >= crate::resources::budget::UNLIMITED {
                0
            } else {
                c
            }
        };
        let key = |k: &(u64, usize)| format!("{}/{}", k.0, k.1);
        let gpus = crate::pipeline::status::device_status(&st, e.device_names())
            .into_iter()
            .map(|d| {
                let current = d.computing.or(d.uploading).map(|(j, _)| j);
                pb::GpuStatus {
                    ordinal: d.index as u32,
                    vram_total_bytes: d.vram_capacity,
                    vram_free_bytes: d.vram_capacity.saturating_sub(d.vram_reserved),
                    current_job_id: current
                        .map(|j| {
                            self.0
                                .jobs
                                .get()
                                .map_or_else(|| j.to_string(), |t| t.public_id(j))
                        })
                        .unwrap_or_default(),
                    current_proof_kind: current.map(kind_of).unwrap_or_default(),
                    computing: d.computing.as_ref().map(key).unwrap_or_default(),
                    staged: d.staged.iter().map(key).collect(),
                    uploading: d.uploading.as_ref().map(key).unwrap_or_default(),
                    vram_reserved_bytes: d.vram_reserved,
                    resident_params: d
                        .resident
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                    in_service: d.in_service,
                    out_of_service_reason: d.out_of_service.unwrap_or_default(),
                    name: d.name,
                }
            })
            .collect();
        let circuits = self
            .0
            .circuits
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        let loaded_srs = loaded
            .iter()
            .map(|s| pb::SrsStatus {
                circuit_id: circuits
                    .get(&s.path)
                    .cloned()
                    .unwrap_or_else(|| s.path.display().to_string()),
                tier: if st.resident.iter().flatten().any(|p| *p == s.path) {
                    pb::srs_status::Tier::Hot
                } else {
                    pb::srs_status::Tier::Warm
                } as i32,
                size_bytes: s.bytes,
                ref_count: s.jobs as u32,
            })
            .collect();
        let mut queues: Vec<pb::QueueStatus> = Vec::new();
        for t in tracked.iter().filter(|t| t.outcome().is_none()) {
            let running = st
                .job_list
                .iter()
                .find(|j| j.id == t.id)
                .is_some_and(|j| j.in_flight > 0 || j.done > 0);
            let q = match queues.iter().position(|q| q.proof_kind == t.kind) {
                Some(i) => &mut queues[i],
                None => {
                    queues.push(pb::QueueStatus {
                        proof_kind: t.kind.clone(),
                        ..Default::default()
                    });
                    queues
                        .last_mut()
                        .ok_or_else(|| Status::internal("queue list"))?
                }
            };
            if running {
                q.in_progress += 1;
            } else {
                q.pending += 1;
            }
        }
        let (completed, failed) = self.jobs()?.metrics().totals();
        let budgets = st
            .vram
            .iter()
            .chain(std::iter::once(&st.host))
            .map(|b| pb::BudgetStatus {
                name: b.name.clone(),
                capacity_bytes: unlimited(b.capacity),
                reserved_bytes: b.reserved,
                high_water_bytes: b.high_water,
            })
            .collect();
        Ok(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: completed,
            total_proofs_failed: failed,
            uptime_seconds: self.jobs()?.metrics().uptime().as_secs(),
            pinned_memory_bytes: pinned as u64,
            pinned_memory_limit_bytes: 0,
            state: self.0.ready.get().name().into(),
            budgets,
        })
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let t = self.submit(req.into_inner()).await?;
        let ahead = self
            .engine()?
            .status()
            .map(|s| {
                s.job_list
                    .iter()
                    .filter(|j| j.id < t.id && !j.cancelled)
                    .count()
            })
            .unwrap_or(0);
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: t.job_id.clone(),
            queue_position: ahead as u32,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let jobs = self.jobs()?;
        let id = job_id(jobs, &r.job_id)?;
        let t = jobs.get(id).ok_or_else(|| {
            Status::not_found(format!(
                "job {} is unknown (not submitted here, or forgotten {} s after it ended)",
                r.job_id.trim(),
                jobs.retain().as_secs()
            ))
        })?;
        let limit = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(self.wait(t, limit).await?))
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = req
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let t = self.submit(submit).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(self.wait(t, None).await?),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let jobs = self.jobs()?.clone();
        let id = job_id(&jobs, &req.into_inner().job_id)?;
        let r = tokio::task::spawn_blocking(move || jobs.cancel(id))
            .await
            .map_err(|e| Status::internal(format!("cancel task: {e}")))?;
        match r {
            Ok(was_running) => Ok(Response::new(pb::CancelProofResponse { was_running })),
            Err(e) => Err(status_of(&e, None)),
        }
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        if self.0.jobs.get().is_none() {
            return Ok(Response::new(pb::GetStatusResponse {
                state: self.0.ready.get().name().into(),
                ..Default::default()
            }));
        }
        let svc = self.clone();
        let r = tokio::task::spawn_blocking(move || svc.status_now())
            .await
            .map_err(|e| Status::internal(format!("status task: {e}")))?;
        Ok(Response::new(r?))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        let svc = self.clone();
        let text = tokio::task::spawn_blocking(move || {
            let jobs = svc.jobs()?;
            jobs.metrics()
                .render(jobs.engine(), Some(jobs), svc.0.ready.get())
                .map_err(|e| status_of(&e, None))
        })
        .await
        .map_err(|e| Status::internal(format!("metrics task: {e}")))??;
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: text,
        }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let id = req.into_inner().circuit_id;
        let (path, reg) = self.circuit_path(&id)?;
        let svc = self.clone();
        let r = tokio::task::spawn_blocking(move || {
            let e = svc.engine()?;
            let already = e.loaded_srs().map_err(|x| status_of(&x, None))?.iter().any(|s| s.path == path);
            let start = Instant::now();
            e.load_srs(&path).map_err(|x| status_of(&x, None))?;
            if let Some(reg) = reg {
                svc.remember(&path, reg);
            }
            slog::info!(log::component("grpc"), "parameters preloaded"; "circuit_id" => id.clone(), "file" => path.display().to_string(), "already_loaded" => already);
            Ok::<_, Status>(pb::PreloadSrsResponse { already_loaded: already, load_time_ms: ms(start.elapsed()) })
        })
        .await
        .map_err(|e| Status::internal(format!("preload task: {e}")))?;
        Ok(Response::new(r?))
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let id = req.into_inner().circuit_id;
        let (path, _) = match self.circuit_path(&id) {
            Ok(p) => p,
            // No file for it: nothing of it can be loaded.
            Err(s) if s.code() == tonic::Code::NotFound => {
                return Ok(Response::new(pb::EvictSrsResponse {
                    was_loaded: false,
                    freed_bytes: 0,
                }))
            }
            Err(s) => return Err(s),
        };
        let svc = self.clone();
        let r = tokio::task::spawn_blocking(move || {
            let e = svc.engine()?;
            let Some(s) = e.loaded_srs().map_err(|x| status_of(&x, None))?.into_iter().find(|s| s.path == path) else {
                return Ok(pb::EvictSrsResponse { was_loaded: false, freed_bytes: 0 });
            };
            let freed = e.evict_srs_freed(&path).map_err(|x| status_of(&x, Some(&format!("circuit id `{id}`"))))?;
            // Host memory, and the VRAM its resident copies held on each GPU.
            let gpus: Vec<usize> = freed.gpus.iter().map(|g| g.gpu).collect();
            slog::info!(log::component("grpc"), "parameters evicted"; "circuit_id" => id.clone(), "host_bytes" => s.bytes, "freed_bytes" => freed.total(), "gpus" => format!("{gpus:?}"));
            Ok::<_, Status>(pb::EvictSrsResponse { was_loaded: true, freed_bytes: freed.total() })
        })
        .await
        .map_err(|e| Status::internal(format!("evict task: {e}")))?;
        Ok(Response::new(r?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn each_engine_error_becomes_its_status_with_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let there = dir.path().join("a.params");
        std::fs::write(&there, b"x").unwrap();
        let missing = dir.path().join("b.params");
        let cases = [
            (
                EngineError::config("engine.gpus", "bad"),
                Code::InvalidArgument,
            ),
            (
                EngineError::Rejected("bad job".into()),
                Code::InvalidArgument,
            ),
            (
                EngineError::UnknownJob {
                    job: 9,
                    retain_s: 1,
                },
                Code::NotFound,
            ),
            (EngineError::srs(&there, "in use"), Code::FailedPrecondition),
            (EngineError::srs(&missing, "no such file"), Code::NotFound),
            (
                EngineError::Stopped("engine stopped".into()),
                Code::Unavailable,
            ),
            (EngineError::Busy("full".into()), Code::Unavailable),
            (EngineError::Devices("no GPU".into()), Code::Internal),
            (EngineError::Start("thread".into()), Code::Internal),
            (EngineError::io("grpc.tcp_listen", "denied"), Code::Internal),
            (
                EngineError::Filecoin(FilecoinError::SectorSize(3)),
                Code::InvalidArgument,
            ),
        ];
        for (e, code) in cases {
            let s = status_of(&e, None);
            assert_eq!(
                (s.code(), s.message()),
                (code, e.to_string().as_str()),
                "{e:?}"
            );
        }
        let s = status_of(&EngineError::srs(&there, "in use"), Some("circuit id `x`"));
        assert_eq!(s.message(), "circuit id `x`: in use");
    }
}
