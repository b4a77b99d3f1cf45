//! The daemon side of the control socket. One thread accepts; each connection gets a thread that
//! answers requests until the peer hangs up. A malformed frame gets an error reply and that
//! connection is closed (its framing is lost); the engine and the other connections go on.
//! Jobs live in the daemon's [`JobTable`] (shared with the gRPC service): `Wait` may be asked
//! again, from any connection, until the job is forgotten (`jobs.retain_s` after its end).
//! A failed call on the engine is answered as [`reply_of`] says: `Response::Error` with the
//! [`EngineError`]'s text.
//!
//! Job ids are the table's public ids (`<run>-<n>`, as gRPC's): answers carry
//! [`JobTable::public_id`], requests are read with [`JobTable::resolve`] ([`job_of`]). An id of
//! an earlier run of the daemon is answered `not found:` with the restart named; an id of this
//! run that no job has (never issued, or forgotten), `not found:` as well.

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use cuzk_engine::circuits::Example;
use cuzk_engine::setup::ensure_params;

use super::proto::{read, write, FrameError, Request, Response};
use crate::daemon::jobs::{IdError, JobTable, Submission};
use crate::daemon::metrics::{Readiness, State};
use crate::pipeline::engine::Engine;
use crate::pipeline::job::JobSpec;
use crate::EngineError;

/// A circuit kind of the embedding program: turns a `ProveCustom` request's input bytes into a
/// job (an error, [`EngineError::Rejected`] for bad input, names what was wrong with them; a
/// panic is caught and reported the same way).
pub type CustomKind = Arc<dyn Fn(&Engine, &[u8]) -> Result<JobSpec, EngineError> + Send + Sync>;

/// Applies a config file's live-changeable settings; answers what changed, or why it was refused.
pub type ReloadFn = Arc<dyn Fn(Option<&Path>) -> Result<String, EngineError> + Send + Sync>;

/// What the server needs besides the engine.
#[derive(Clone, Default)]
pub struct ServerOptions {
    /// The embedding program's own circuit kinds, by name (`Request::ProveCustom`).
    pub custom: Vec<(String, CustomKind)>,
    /// The daemon's state, shared with its other interfaces (`Status`, `Ready`, `Drain`).
    pub ready: Readiness,
    /// Applies the live-changeable settings of a config file (`Reload`); `None`: refused.
    pub reload: Option<ReloadFn>,
    /// Where parameters for example circuits (`ProveExample`) are kept.
    pub example_params_dir: PathBuf,
    /// Where Filecoin parameters are, and how Filecoin jobs are scheduled.
    #[cfg(feature = "filecoin")]
    pub filecoin: crate::filecoin::FilecoinConfig,
}

/// The engine, once it can prove.
struct Live {
    engine: Arc<Engine>,
    jobs: Arc<JobTable>,
}

struct Shared {
    live: std::sync::OnceLock<Live>,
    opts: ServerOptions,
    draining: AtomicBool,
    stop: AtomicBool,
    path: PathBuf,
}

pub struct ControlServer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// The uid of the process at the other end of `s`.
fn peer_uid(s: &UnixStream) -> Result<u32, String> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(format!("SO_PEERCRED: {}", std::io::Error::last_os_error()));
    }
    Ok(cred.uid)
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file), mode 0600, and starts serving.
    /// Binds and serves with the engine `jobs` runs on.
    pub fn start(
        jobs: Arc<JobTable>,
        path: &Path,
        opts: ServerOptions,
    ) -> Result<ControlServer, EngineError> {
        let s = Self::bind(path, opts)?;
        s.attach(jobs);
        Ok(s)
    }

    /// Hands the server its engine: until then it answers `Ready` and `Status` with `starting`,
    /// `Shutdown` as usual, and everything else with an error saying it is starting.
    pub fn attach(&self, jobs: Arc<JobTable>) {
        let _ = self.shared.live.set(Live {
            engine: jobs.engine().clone(),
            jobs,
        });
    }

    /// Binds `path` (replacing a stale socket file), mode 0600, and starts serving, before the
    /// engine exists (see [`attach`](Self::attach)).
    pub fn bind(path: &Path, opts: ServerOptions) -> Result<ControlServer, EngineError> {
        let io =
            |detail: String| EngineError::io(format!("control socket {}", path.display()), detail);
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(io(format!(
                    "{}: another daemon is listening there",
                    path.display()
                )));
            }
            std::fs::remove_file(path)
                .map_err(|e| io(format!("removing the stale socket {}: {e}", path.display())))?;
        }
        let listener =
            UnixListener::bind(path).map_err(|e| io(format!("binding {}: {e}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
            // Refused: leave no socket file behind.
            let _ = std::fs::remove_file(path);
            io(format!("chmod 0600 {}: {e}", path.display()))
        })?;
        let shared = Arc::new(Shared {
            live: std::sync::OnceLock::new(),
            opts,
            draining: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            path: path.into(),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("cuzk-control".into())
            .spawn(move || {
                // SAFETY: geteuid has no preconditions.
                let me = unsafe { libc::geteuid() };
                for conn in listener.incoming() {
                    if sh.stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(mut s) = conn else { continue };
                    match peer_uid(&s) {
                        Ok(uid) if uid == me => {
                            let sh = sh.clone();
                            let _ = std::thread::Builder::new()
                                .name("cuzk-control-conn".into())
                                .spawn(move || serve(&sh, s));
                        }
                        Ok(uid) => {
                            let _ = write(
                                &mut s,
                                &Response::Error(format!(
                                    "peer uid {uid} is not the daemon's uid {me}"
                                )),
                            );
                        }
                        Err(e) => {
                            let _ = write(&mut s, &Response::Error(e));
                        }
                    }
                }
                let _ = std::fs::remove_file(&sh.path);
            })
            .map_err(|e| {
                let _ = std::fs::remove_file(path);
                EngineError::Start(format!("starting the control thread: {e}"))
            })?;
        Ok(ControlServer {
            shared,
            thread: Some(thread),
        })
    }

    /// Blocks until a `Shutdown` or a finished `Drain`.
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Stops accepting connections.
    pub fn stop(&self) {
        stop(&self.shared);
    }

    /// A handle that drains this server from another thread.
    pub fn drainer(&self) -> Drainer {
        Drainer(self.shared.clone())
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        stop(&self.shared);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Refuses new work (both interfaces: the shared state turns `draining`), waits for every job
/// already taken (and any that slipped in meanwhile) to end, then stops the server.
fn drain(sh: &Shared) -> String {
    sh.draining.store(true, Ordering::Release);
    sh.opts.ready.set(State::Draining);
    let (mut n, mut failed) = (0, 0);
    if let Some(live) = sh.live.get() {
        loop {
            let jobs = live.jobs.live();
            if jobs.is_empty() {
                break;
            }
            n += jobs.len();
            failed += jobs
                .iter()
                .filter(|t| t.wait(None).is_none_or(|o| !o.is_success()))
                .count();
        }
    }
    stop(sh);
    format!("drained: {n} job(s) finished ({failed} failed); stopping")
}

/// Drains or stops a [`ControlServer`] from outside a request (the daemon's signal handler).
#[derive(Clone)]
pub struct Drainer(Arc<Shared>);

impl Drainer {
    /// What the control `Drain` request does: refuse new work, wait for the jobs taken, stop
    /// serving (so [`ControlServer::wait`] returns). Answers the summary line.
    pub fn drain(&self) -> String {
        drain(&self.0)
    }

    /// Whether a drain has begun.
    pub fn draining(&self) -> bool {
        self.0.draining.load(Ordering::Acquire)
    }

    /// The control socket's path.
    pub fn path(&self) -> &Path {
        &self.0.path
    }
}

fn stop(sh: &Shared) {
    if !sh.stop.swap(true, Ordering::AcqRel) {
        // Wake the accept loop.
        let _ = UnixStream::connect(&sh.path);
    }
}

fn serve(sh: &Arc<Shared>, mut s: UnixStream) {
    loop {
        let req: Request = match read(&mut s) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(FrameError::Io(_)) => return,
            Err(e) => {
                let _ = write(&mut s, &Response::Error(format!("malformed request: {e}")));
                return;
            }
        };
        let stop_after = matches!(req, Request::Shutdown);
        let resp = handle(sh, req);
        if write(&mut s, &resp).is_err() {
            return;
        }
        if stop_after {
            stop(sh);
            return;
        }
    }
}

/// The answers of a server whose engine is still starting.
fn starting(sh: &Shared, req: Request) -> Response {
    let state = sh.opts.ready.get().name();
    match req {
        Request::Ready => Response::Ok(state.into()),
        Request::Status => Response::Json(serde_json::json!({ "state": state }).to_string()),
        Request::Shutdown => Response::Ok("stopping".into()),
        _ => Response::Error(format!(
            "{state}: the engine cannot take requests yet (opening devices, compiling kernels)"
        )),
    }
}

/// The answer to a call on the engine that failed with `e`: its text, after `about` where the
/// request names what it was about. The one place an [`EngineError`] becomes a reply.
fn reply_of(e: &EngineError, about: Option<&str>) -> Response {
    match about {
        Some(about) => Response::Error(format!("{about}: {e}")),
        None => Response::Error(e.to_string()),
    }
}

/// The engine job a client's id names in this run, or the answer saying why none: what is no job
/// id at all, and (prefixed `not found:`) an id never issued or from an earlier run of the daemon
/// (its message names the restart).
fn job_of(jobs: &JobTable, job: &str) -> Result<crate::JobId, Response> {
    jobs.resolve(job).map_err(|e| match e {
        IdError::Malformed(m) => Response::Error(m),
        IdError::NotFound(m) => Response::Error(format!("not found: {m}")),
    })
}

/// `Cancel`: the job cancelled, already ended, or not found.
fn cancel(live: &Live, job: &str) -> Response {
    let id = match job_of(&live.jobs, job) {
        Ok(id) => id,
        Err(r) => return r,
    };
    let job = live.jobs.public_id(id);
    match live.jobs.cancel(id) {
        Ok(true) => Response::Ok(format!("job {job} cancelled")),
        Ok(false) => Response::Error(format!("job {job} is not running (it already ended)")),
        Err(EngineError::UnknownJob { retain_s, .. }) => Response::Error(format!(
            "not found: job {job} is unknown (never submitted here, or forgotten {retain_s} s after it ended)"
        )),
        Err(x) => reply_of(&x, Some(&format!("job {job} is not running"))),
    }
}

/// `Wait`: blocks until the job ends; its proof, or why there is none.
fn wait(live: &Live, job: &str) -> Response {
    let id = match job_of(&live.jobs, job) {
        Ok(id) => id,
        Err(r) => return r,
    };
    let Some(t) = live.jobs.get(id) else {
        return Response::Error(format!(
            "not found: job {} is unknown: not submitted through this daemon, or forgotten {} s after it ended (jobs.retain_s)",
            live.jobs.public_id(id),
            live.jobs.retain().as_secs()
        ));
    };
    match t.wait(None).map(|o| o.result.clone()) {
        None => Response::Error(format!(
            "job {}: the daemon stopped before it ended",
            t.job_id
        )),
        Some(Ok(out)) => Response::Proof {
            job: t.job_id.clone(),
            proof: out.to_bytes(),
            partitions: out.proofs.len() as u32,
            wall_ms: out.wall.as_millis() as u64,
            queue_ms: out.queue.as_millis() as u64,
            prove_ms: out.prove.as_millis() as u64,
        },
        Some(Err(x)) => Response::Error(x.to_string()),
    }
}

fn handle(sh: &Arc<Shared>, req: Request) -> Response {
    let Some(live) = sh.live.get() else {
        return starting(sh, req);
    };
    let e = &live.engine;
    match req {
        Request::Status => match (e.status(), e.pinned()) {
            (Ok(st), Ok((bytes, regs))) => {
                let mut v = serde_json::to_value(&st).unwrap_or_default();
                // Per device: its queue (computing, staged, uploading), VRAM budget, resident
                // parameters and service state, each with a one-line summary.
                v["gpus"] = serde_json::to_value(crate::pipeline::status::device_status(
                    &st,
                    e.device_names(),
                ))
                .unwrap_or_default();
                v["pinned_bytes"] = bytes.into();
                v["pin_registrations"] = regs.into();
                v["draining"] = sh.draining.load(Ordering::Acquire).into();
                v["state"] = sh.opts.ready.get().name().into();
                v["tracked_jobs"] = live.jobs.all().len().into();
                Response::Json(v.to_string())
            }
            (Err(x), _) | (_, Err(x)) => reply_of(&x, None),
        },
        Request::Metrics => {
            match live
                .jobs
                .metrics()
                .render(e, Some(&live.jobs), sh.opts.ready.get())
            {
                Ok(text) => Response::Ok(text),
                Err(x) => reply_of(&x, None),
            }
        }
        Request::Ready => Response::Ok(sh.opts.ready.get().name().into()),
        Request::Reload { path } => match &sh.opts.reload {
            Some(f) => match f(path.as_deref().map(Path::new)) {
                Ok(what) => Response::Ok(what),
                Err(x) => reply_of(&x, None),
            },
            None => Response::Error(
                "reload: this server was started without a settings file to reload".into(),
            ),
        },
        Request::Cancel { job } => cancel(live, &job),
        Request::Preload { path } => match e.load_srs(Path::new(&path)) {
            Ok(srs) => Response::Ok(format!("{path}: loaded ({:?})", srs.origin())),
            Err(x) => reply_of(&x, None),
        },
        Request::Evict { path } => match e.evict_srs(Path::new(&path)) {
            Ok(()) => Response::Ok(format!("{path}: evicted")),
            Err(x) => reply_of(&x, None),
        },
        Request::Pause => {
            e.set_paused(true);
            Response::Ok("dispatch paused".into())
        }
        Request::Resume => {
            e.set_paused(false);
            Response::Ok("dispatch resumed".into())
        }
        Request::ProveExample {
            circuit,
            size,
            partitions,
        } => prove_example(sh, live, &circuit, size, partitions),
        Request::ProveCustom { kind, input } => prove_custom(sh, live, &kind, &input),
        Request::Wait { job } => wait(live, &job),
        Request::Drain => Response::Ok(drain(sh)),
        Request::Shutdown => Response::Ok("stopping".into()),
        #[cfg(feature = "filecoin")]
        Request::Prove(req) => prove_filecoin(sh, live, req),
    }
}

/// Submits a Filecoin proof; its errors (malformed input, missing parameters, a circuit that
/// cannot be built) are this request's answer, and the daemon goes on.
#[cfg(feature = "filecoin")]
fn prove_filecoin(sh: &Arc<Shared>, live: &Live, req: cuzk_filecoin::ProofRequest) -> Response {
    if sh.draining.load(Ordering::Acquire) {
        return Response::Error("draining: no new work is accepted".into());
    }
    let kind = req.kind();
    let start = std::time::Instant::now();
    match live.engine.submit_filecoin(req, &sh.opts.filecoin) {
        Ok(j) => {
            let sub = Submission {
                kind: kind.name().into(),
                request_id: String::new(),
                partitions: j.partitions,
                srs_load: start.elapsed(),
            };
            let t = live.jobs.track(j.handle, sub);
            Response::Submitted {
                job: t.job_id.clone(),
            }
        }
        Err(x) => reply_of(&x, Some(&format!("{kind} request"))),
    }
}

/// Submits a job of a registered custom kind.
fn prove_custom(sh: &Arc<Shared>, live: &Live, kind: &str, input: &[u8]) -> Response {
    if sh.draining.load(Ordering::Acquire) {
        return Response::Error("draining: no new work is accepted".into());
    }
    let Some((_, make)) = sh.opts.custom.iter().find(|(k, _)| k == kind) else {
        let known: Vec<&str> = sh.opts.custom.iter().map(|(k, _)| k.as_str()).collect();
        return Response::Error(format!(
            "unknown circuit kind `{kind}`; this daemon registers {}",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        ));
    };
    let spec = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        make(&live.engine, input)
    })) {
        Ok(Ok(spec)) => spec.kind(kind),
        Ok(Err(x)) => return reply_of(&x, Some(&format!("{kind} request"))),
        Err(p) => {
            return Response::Error(format!(
                "{kind} request: building the job panicked: {}",
                crate::pipeline::job::panic_text(&*p)
            ))
        }
    };
    let partitions = spec.partitions.len();
    match live.engine.submit(spec) {
        Ok(h) => {
            let t = live.jobs.track(
                h,
                Submission {
                    kind: kind.into(),
                    request_id: String::new(),
                    partitions,
                    srs_load: std::time::Duration::ZERO,
                },
            );
            Response::Submitted {
                job: t.job_id.clone(),
            }
        }
        Err(x) => reply_of(&x, None),
    }
}

fn prove_example(
    sh: &Arc<Shared>,
    live: &Live,
    circuit: &str,
    size: usize,
    partitions: usize,
) -> Response {
    if sh.draining.load(Ordering::Acquire) {
        return Response::Error("draining: no new work is accepted".into());
    }
    if partitions == 0 {
        return Response::Error("partitions must be at least 1".into());
    }
    let Some(blank) = Example::new(circuit, size, 0) else {
        return Response::Error(format!(
            "unknown circuit `{circuit}`; choose one of {}",
            Example::NAMES.join(", ")
        ));
    };
    let path = Example::params_path(&sh.opts.example_params_dir, circuit, size);
    if let Err(x) = ensure_params(&path, blank, Example::SETUP_SEED) {
        return Response::Error(format!("parameters for {circuit} {size}: {x}"));
    }
    let srs = match live.engine.load_srs(&path) {
        Ok(s) => s,
        Err(x) => return reply_of(&x, None),
    };
    let circuits: Vec<Example> = (0..partitions)
        .filter_map(|p| Example::new(circuit, size, 1000 + p as u64))
        .collect();
    match live.engine.submit(JobSpec::new(srs, circuits)) {
        Ok(h) => {
            let t = live.jobs.track(
                h,
                Submission {
                    kind: format!("example-{circuit}"),
                    request_id: String::new(),
                    partitions,
                    srs_load: std::time::Duration::ZERO,
                },
            );
            Response::Submitted {
                job: t.job_id.clone(),
            }
        }
        Err(x) => reply_of(&x, None),
    }
}
