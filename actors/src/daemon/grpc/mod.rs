//! The gRPC service `cuzk.v1.ProvingEngine` (`proto/cuzk/v1/engine.proto`), wire-compatible with
//! the client Curio speaks: served on a unix socket and, optionally, TCP (loopback unless told
//! otherwise; a shared token, when set, is required there as `authorization: Bearer <token>`).
//!
//! Jobs go through the daemon's [`JobTable`]: a client that hangs up while waiting does not lose
//! its job (it finishes, or is cancelled when `grpc.cancel_on_disconnect` says so), and a job is
//! kept for `jobs.retain_s` after it ends. Errors are gRPC statuses that name what was wrong:
//! `INVALID_ARGUMENT` for a request that cannot be proved as it stands, `NOT_FOUND` for an unknown
//! job or a missing parameter file, `FAILED_PRECONDITION` for an evict refused while a job holds
//! the parameters, `UNAVAILABLE` while starting or draining, `UNAUTHENTICATED` for a wrong token.

pub mod curio;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_filecoin::{params, FilecoinError, Registered};
use tonic::{Request, Response, Status};

use crate::daemon::jobs::{JobTable, Outcome, Submission, Tracked};
use crate::daemon::metrics::{Readiness, State};
use crate::filecoin::{job_spec, FilecoinConfig};
use crate::log;

#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

use pb::proving_engine_server::{ProvingEngine, ProvingEngineServer};

/// How the service runs.
#[derive(Clone)]
pub struct GrpcOptions {
    /// The unix socket (mode 0600); `None`: not served on one.
    pub unix_socket: Option<PathBuf>,
    /// `host:port` to serve on TCP; `None`: not served on TCP.
    pub tcp_listen: Option<String>,
    /// Required on TCP (as `authorization: Bearer <token>`) when set.
    pub token: Option<String>,
    /// Serve TCP on a non-loopback address without a token (otherwise refused at start).
    pub allow_remote: bool,
    /// Largest message either way.
    pub max_message_bytes: usize,
    /// Cancel a job whose client hung up while waiting for it (otherwise it finishes and is kept).
    pub cancel_on_disconnect: Arc<AtomicBool>,
    pub filecoin: FilecoinConfig,
}

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
}

/// The service behind both listeners.
#[derive(Clone)]
pub struct Service(Arc<Inner>);

fn status_of(e: &FilecoinError) -> tonic::Code {
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

fn job_id(s: &str) -> Result<u64, Status> {
    s.trim().parse::<u64>().map_err(|_| {
        Status::invalid_argument(format!(
            "job_id `{s}` is not a job id of this engine (a decimal number)"
        ))
    })
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// An `AwaitProofResponse` for a job that ended.
fn response_of(t: &Tracked, o: &Outcome) -> pb::AwaitProofResponse {
    use pb::await_proof_response::Status as S;
    let mut r = pb::AwaitProofResponse {
        job_id: t.id.to_string(),
        srs_load_ms: ms(t.srs_load),
        synthesis_ms: o.stages.synth_ms as u64,
        gpu_compute_ms: o.stages.gpu_total_ms as u64,
        ..Default::default()
    };
    match &o.result {
        Ok(out) => {
            r.status = S::Completed as i32;
            r.proof = out.to_bytes();
            r.queue_wait_ms = ms(out.queue);
            r.total_ms = ms(out.wall + t.srs_load);
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
            State::Draining => Err(Status::unavailable("draining: no new work is accepted")),
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
        tokio::task::spawn_blocking(move || svc.submit_blocking(proof, named, prio, request_id))
            .await
            .map_err(|e| Status::internal(format!("submission task: {e}")))?
    }

    fn submit_blocking(
        &self,
        proof: cuzk_filecoin::ProofRequest,
        named: Registered,
        prio: i32,
        request_id: String,
    ) -> Result<Arc<Tracked>, Status> {
        let fail = |e: FilecoinError| Status::new(status_of(&e), e.to_string());
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
        let srs = self.engine()?.load_srs(&path).map_err(|e| {
            Status::failed_precondition(format!("parameters {}: {e}", path.display()))
        })?;
        let srs_load = start.elapsed();
        self.remember(&path, reg);
        let priority = curio::priority(prio, (cfg.priority)(kind));
        let spec = job_spec(parsed, srs, priority).map_err(fail)?;
        let partitions = spec.partitions.len();
        let handle = self.engine()?.submit(spec).map_err(Status::unavailable)?;
        Ok(self.jobs()?.track(
            handle,
            Submission {
                kind: kind.name().into(),
                request_id,
                partitions,
                srs_load,
            },
        ))
    }

    /// Waits for `t` (at most `limit`), keeping the job if the client hangs up.
    async fn wait(
        &self,
        t: Arc<Tracked>,
        limit: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        if let Some(o) = t.outcome() {
            return Ok(response_of(&t, &o));
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
            Some(o) => response_of(&t, &o),
            None => pb::AwaitProofResponse {
                job_id: t.id.to_string(),
                status: pb::await_proof_response::Status::Timeout as i32,
                error_message: format!(
                    "job {} still running after {} ms; it goes on (await it again)",
                    t.id,
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
        let st = e.status().map_err(Status::unavailable)?;
        let (pinned, _) = e.pinned().map_err(Status::unavailable)?;
        let loaded = e.loaded_srs().map_err(Status::unavailable)?;
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
                    current_job_id: current.map(|j| j.to_string()).unwrap_or_default(),
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
                ref_count: s.holders as u32,
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
            job_id: t.id.to_string(),
            queue_position: ahead as u32,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let id = job_id(&r.job_id)?;
        let jobs = self.jobs()?;
        let t = jobs.get(id).ok_or_else(|| {
            Status::not_found(format!(
                "job {id} is unknown (not submitted here, or forgotten {} s after it ended)",
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
        let id = job_id(&req.into_inner().job_id)?;
        let jobs = self.jobs()?.clone();
        let r = tokio::task::spawn_blocking(move || jobs.cancel(id))
            .await
            .map_err(|e| Status::internal(format!("cancel task: {e}")))?;
        match r {
            Ok(was_running) => Ok(Response::new(pb::CancelProofResponse { was_running })),
            Err(e) => Err(Status::not_found(e)),
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
                .map_err(Status::unavailable)
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
            let already = e.loaded_srs().map_err(Status::unavailable)?.iter().any(|s| s.path == path);
            let start = Instant::now();
            e.load_srs(&path).map_err(|x| if path.exists() { Status::failed_precondition(x) } else { Status::not_found(x) })?;
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
            let Some(s) = e.loaded_srs().map_err(Status::unavailable)?.into_iter().find(|s| s.path == path) else {
                return Ok(pb::EvictSrsResponse { was_loaded: false, freed_bytes: 0 });
            };
            let freed = e.evict_srs_freed(&path).map_err(|x| Status::failed_precondition(format!("circuit id `{id}`: {x}")))?;
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

/// Checks `authorization: Bearer <token>` (compared in constant time).
fn check_token(token: &str, req: &Request<()>) -> Result<(), Status> {
    let Some(got) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "this endpoint needs `authorization: Bearer <token>` (grpc.token)",
        ));
    };
    let got = got.to_str().unwrap_or("");
    let got = got.strip_prefix("Bearer ").unwrap_or(got).as_bytes();
    let want = token.as_bytes();
    let diff = got.len() ^ want.len()
        | got
            .iter()
            .zip(want.iter().cycle())
            .fold(0usize, |d, (a, b)| d | usize::from(a ^ b));
    if diff == 0 && !want.is_empty() {
        Ok(())
    } else {
        Err(Status::unauthenticated("wrong token (grpc.token)"))
    }
}

/// Whether a unix-socket peer whose credentials read `peer` (its uid) may talk to a daemon
/// running as uid `me`: only the same uid (the socket is also mode 0600); why not, otherwise.
fn peer_allowed(peer: std::io::Result<u32>, me: u32) -> Result<(), String> {
    match peer {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(format!("peer uid {uid} is not the daemon's uid {me}")),
        Err(e) => Err(format!("reading the peer's credentials (SO_PEERCRED): {e}")),
    }
}

/// The running service: its runtime, and where it listens.
pub struct GrpcServer {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    pub unix_socket: Option<PathBuf>,
    pub tcp_addr: Option<SocketAddr>,
}

/// The shared-token check of a listener (`None`: none required).
#[derive(Clone)]
struct TokenCheck(Option<String>);

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        match &self.0 {
            Some(t) => check_token(t, &req).map(|()| req),
            None => Ok(req),
        }
    }
}

type Served =
    tonic::service::interceptor::InterceptedService<ProvingEngineServer<Service>, TokenCheck>;

/// Serves `svc` on `incoming` until `stop` turns true.
async fn serve<I, IO, IE>(
    svc: Served,
    incoming: I,
    mut stop: tokio::sync::watch::Receiver<bool>,
    l: slog::Logger,
    what: &'static str,
) where
    I: tokio_stream::Stream<Item = Result<IO, IE>>,
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let r = tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|v| *v).await;
        })
        .await;
    if let Err(e) = r {
        slog::error!(l, "gRPC on {} stopped: {}", what, e);
    }
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

impl GrpcServer {
    /// Binds the configured listeners and serves `service` on a runtime of its own.
    pub fn start(service: Service) -> Result<GrpcServer, String> {
        let opts = service.0.opts.clone();
        if opts.unix_socket.is_none() && opts.tcp_listen.is_none() {
            return Err("grpc: neither grpc.unix_socket nor grpc.tcp_listen is set".into());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cuzk-grpc")
            .enable_all()
            .build()
            .map_err(|e| format!("grpc runtime: {e}"))?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let max = opts.max_message_bytes;
        let svc = Arc::new(service);
        let server = |check: TokenCheck| {
            let s = ProvingEngineServer::from_arc(svc.clone())
                .max_decoding_message_size(max)
                .max_encoding_message_size(max);
            tonic::service::interceptor::InterceptedService::new(s, check)
        };
        let l = log::component("grpc");
        let mut unix_socket = None;
        if let Some(path) = &opts.unix_socket {
            if path.exists() {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(format!(
                        "grpc.unix_socket {}: another daemon is listening there",
                        path.display()
                    ));
                }
                std::fs::remove_file(path)
                    .map_err(|e| format!("removing the stale socket {}: {e}", path.display()))?;
            }
            let listener = {
                let _g = runtime.enter();
                tokio::net::UnixListener::bind(path)
                    .map_err(|e| format!("grpc.unix_socket {}: {e}", path.display()))?
            };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("chmod 0600 {}: {e}", path.display()))?;
            // The socket's file mode guards it, and each connection's peer uid is checked (as on
            // the control socket): no token there.
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            let peers = l.clone();
            let incoming = tokio_stream::StreamExt::filter_map(
                tokio_stream::wrappers::UnixListenerStream::new(listener),
                move |conn| match conn {
                    Ok(s) => match peer_allowed(s.peer_cred().map(|c| c.uid()), me) {
                        Ok(()) => Some(Ok(s)),
                        Err(why) => {
                            slog::warn!(
                                peers,
                                "gRPC connection on the unix socket refused: {}",
                                why
                            );
                            None
                        }
                    },
                    Err(e) => Some(Err(e)),
                },
            );
            runtime.spawn(serve(
                server(TokenCheck(None)),
                incoming,
                stop_rx.clone(),
                l.clone(),
                "the unix socket",
            ));
            slog::info!(l, "gRPC cuzk.v1.ProvingEngine listening"; "unix_socket" => path.display().to_string());
            unix_socket = Some(path.clone());
        }
        let mut tcp_addr = None;
        if let Some(addr) = &opts.tcp_listen {
            let listener = {
                let _g = runtime.enter();
                let std_l = std::net::TcpListener::bind(addr)
                    .map_err(|e| format!("grpc.tcp_listen {addr}: {e}"))?;
                std_l
                    .set_nonblocking(true)
                    .map_err(|e| format!("grpc.tcp_listen {addr}: {e}"))?;
                tokio::net::TcpListener::from_std(std_l)
                    .map_err(|e| format!("grpc.tcp_listen {addr}: {e}"))?
            };
            let bound = listener
                .local_addr()
                .map_err(|e| format!("grpc.tcp_listen {addr}: {e}"))?;
            if !is_loopback(&bound) && opts.token.is_none() && !opts.allow_remote {
                return Err(format!(
                    "grpc.tcp_listen {addr} is not a loopback address: set grpc.token (clients then send `authorization: Bearer <token>`), or grpc.allow_remote = true to serve it without one"
                ));
            }
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            runtime.spawn(serve(
                server(TokenCheck(opts.token.clone())),
                incoming,
                stop_rx.clone(),
                l.clone(),
                "TCP",
            ));
            slog::info!(l, "gRPC cuzk.v1.ProvingEngine listening"; "tcp" => bound.to_string(), "token" => opts.token.is_some());
            tcp_addr = Some(bound);
        }
        Ok(GrpcServer {
            runtime: Some(runtime),
            stop: Some(stop_tx),
            unix_socket,
            tcp_addr,
        })
    }

    /// Stops serving (in-flight calls are dropped; their jobs go on in the engine).
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        if let Some(p) = &self.unix_socket {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::peer_allowed;

    #[test]
    fn only_the_daemons_own_uid_may_connect_on_the_unix_socket() {
        assert_eq!(peer_allowed(Ok(1000), 1000), Ok(()));
        assert_eq!(peer_allowed(Ok(0), 0), Ok(()));
        let e = peer_allowed(Ok(1001), 1000).unwrap_err();
        assert!(e.contains("1001") && e.contains("1000"), "{e}");
        // root is not the daemon's uid either: refused like any other.
        assert!(peer_allowed(Ok(0), 1000).is_err());
        let e = peer_allowed(Err(std::io::Error::other("no creds")), 1000).unwrap_err();
        assert!(e.contains("SO_PEERCRED") && e.contains("no creds"), "{e}");
    }
}
