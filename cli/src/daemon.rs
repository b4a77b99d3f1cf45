//! `cuzk daemon`: the engine as a long-running process, controlled over its unix socket and, where
//! configured, serving gRPC `cuzk.v1.ProvingEngine` (Curio) and Prometheus `/metrics` over HTTP.
//!
//! SIGTERM and SIGINT drain it as the control `drain` does: one log line, new work refused
//! (UNAVAILABLE, "draining"), the jobs already taken finish and are answered, the socket files
//! are removed, exit 0. A second signal stops it at once (exit 128 + the signal), still removing
//! the socket files. A start refused halfway (a busy port, devices that do not open) leaves no
//! socket file behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_actors::daemon::control::server::{ControlServer, Drainer, ServerOptions};
use cuzk_actors::daemon::jobs::JobTable;
use cuzk_actors::daemon::metrics::{serve_http, Metrics, Readiness, State};
use cuzk_actors::daemon::settings::Settings;
use cuzk_actors::log;
use cuzk_actors::{Engine, EngineError};

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The control socket (default: $XDG_RUNTIME_DIR/cuzk.sock, else /tmp/cuzk-<uid>.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// A config file (see config/cuzk.toml); CUZK_* environment overrides apply too.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where parameters for example circuits (`ctl prove`) are kept.
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Filecoin parameter directory (overrides filecoin.params_dir; default
    /// $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    filecoin_params_dir: Option<PathBuf>,
    /// Serve gRPC cuzk.v1.ProvingEngine on this unix socket (overrides grpc.unix_socket).
    #[arg(long)]
    grpc_socket: Option<PathBuf>,
    /// Serve gRPC on this host:port (overrides grpc.tcp_listen).
    #[arg(long)]
    grpc_listen: Option<String>,
    /// Serve Prometheus text on http://ADDR/metrics (overrides metrics.http_listen).
    #[arg(long)]
    metrics_listen: Option<String>,
}

pub fn default_socket() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("cuzk.sock");
    }
    // SAFETY: getuid has no preconditions.
    PathBuf::from(format!("/tmp/cuzk-{}.sock", unsafe { libc::getuid() }))
}

fn nonempty(s: &str) -> Option<String> {
    (!s.trim().is_empty()).then(|| s.trim().to_string())
}

/// The settings of `file` (and the environment), with the command line's overrides.
fn settings(file: Option<&Path>, cli: &Overrides) -> std::result::Result<Settings, EngineError> {
    let mut s = Settings::load(file)?;
    if let Some(p) = &cli.grpc_socket {
        s.grpc.unix_socket = p.display().to_string();
    }
    if let Some(l) = &cli.grpc_listen {
        s.grpc.tcp_listen = l.clone();
    }
    if let Some(l) = &cli.metrics_listen {
        s.metrics.http_listen = l.clone();
    }
    Ok(s)
}

#[derive(Clone)]
struct Overrides {
    grpc_socket: Option<PathBuf>,
    grpc_listen: Option<String>,
    metrics_listen: Option<String>,
}

/// Applies the live keys of a re-read config; refuses (naming them) keys that need a restart.
fn reloader(
    file: Option<PathBuf>,
    cli: Overrides,
    current: Settings,
    cancel_on_disconnect: Arc<AtomicBool>,
) -> impl Fn(Option<&Path>, &JobTable) -> std::result::Result<String, EngineError> + Send + Sync {
    let current = Mutex::new(current);
    move |path: Option<&Path>, jobs: &JobTable| {
        let new = settings(path.or(file.as_deref()), &cli)?;
        let mut cur = current
            .lock()
            .map_err(|_| EngineError::Stopped("reload: settings lock poisoned".into()))?;
        let changed = cur.live_changes(&new)?;
        jobs.set_retain(Duration::from_secs(new.jobs.retain_s));
        cancel_on_disconnect.store(new.grpc.cancel_on_disconnect, Ordering::Release);
        log::set_level(log::parse_level(&new.log.level)?);
        *cur = new;
        slog::info!(log::component("daemon"), "settings reloaded"; "changed" => changed.join(","));
        Ok(if changed.is_empty() {
            "reloaded: nothing changed".into()
        } else {
            format!("reloaded: {}", changed.join(", "))
        })
    }
}

/// Takes SIGTERM and SIGINT from now on (registered before this returns): the first drains
/// through `drainer` on a thread of its own, a second removes the socket files and exits.
fn watch_signals(
    drainer: Drainer,
    grpc_socket: Option<PathBuf>,
    table: Arc<std::sync::OnceLock<Arc<JobTable>>>,
) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (mut term, mut int) = {
        let _g = rt.enter();
        (
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        )
    };
    std::thread::Builder::new()
        .name("cuzk-signals".into())
        .spawn(move || {
            rt.block_on(async move {
                let l = log::component("daemon");
                let mut drain_started = false;
                loop {
                    let (name, number) = tokio::select! {
                        _ = term.recv() => ("SIGTERM", libc::SIGTERM),
                        _ = int.recv() => ("SIGINT", libc::SIGINT),
                    };
                    if !drain_started {
                        drain_started = true;
                        let in_flight = table.get().map_or(0, |j| j.live().len());
                        slog::info!(l, "{}: draining: no new work is taken; the jobs in flight finish and are answered, then the daemon exits (a second signal stops it at once)", name; "signal" => name, "jobs_in_flight" => in_flight);
                        let (d, l) = (drainer.clone(), l.clone());
                        let _ = std::thread::Builder::new()
                            .name("cuzk-drain".into())
                            .spawn(move || {
                                let done = d.drain();
                                slog::info!(l, "{}", done);
                            });
                    } else {
                        slog::warn!(l, "{}: a second signal while draining: stopping at once", name; "signal" => name);
                        let _ = std::fs::remove_file(drainer.path());
                        if let Some(p) = &grpc_socket {
                            let _ = std::fs::remove_file(p);
                        }
                        std::process::exit(128 + number);
                    }
                }
            })
        })?;
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    let t0 = Instant::now();
    let cli = Overrides {
        grpc_socket: a.grpc_socket.clone(),
        grpc_listen: a.grpc_listen.clone(),
        metrics_listen: a.metrics_listen.clone(),
    };
    let settings = settings(a.config.as_deref(), &cli)?;
    let log_format: log::Format = settings.log.format.parse()?;
    log::init(log_format, log::parse_level(&settings.log.level)?);
    if log_format == log::Format::Json {
        // A panic's text as a JSON line too, not raw text among them.
        log::log_panics();
    }
    let l = log::component("daemon");
    let config_ms = t0.elapsed().as_millis() as u64;

    // The sockets first: probes and clients get `starting` while the devices open and the
    // kernels compile, rather than no answer.
    let t = Instant::now();
    let ready = Readiness::default();
    let filecoin = cuzk_actors::filecoin::FilecoinConfig {
        params_dir: a
            .filecoin_params_dir
            .clone()
            .or_else(|| settings.filecoin_params_dir()),
        ..Default::default()
    };
    let cancel_on_disconnect = Arc::new(AtomicBool::new(settings.grpc.cancel_on_disconnect));
    let socket = a.socket.unwrap_or_else(default_socket);
    let table = Arc::new(std::sync::OnceLock::<Arc<JobTable>>::new());
    let reload_table = table.clone();
    let reload_fn = reloader(
        a.config.clone(),
        cli,
        settings.clone(),
        cancel_on_disconnect.clone(),
    );
    let opts = ServerOptions {
        // The stock daemon registers no circuit kinds of its own (an embedding program does:
        // examples/embed_daemon.rs).
        custom: Vec::new(),
        ready: ready.clone(),
        reload: Some(Arc::new(move |p: Option<&Path>| match reload_table.get() {
            Some(jobs) => reload_fn(p, jobs),
            None => Err(EngineError::Rejected(
                "reload: the engine is still starting".into(),
            )),
        })),
        example_params_dir: a.params_dir.unwrap_or_else(crate::default_params_dir),
        filecoin: filecoin.clone(),
    };
    let server = ControlServer::bind(&socket, opts)?;
    slog::info!(l, "control socket listening"; "socket" => socket.display().to_string());
    let g = &settings.grpc;
    watch_signals(
        server.drainer(),
        nonempty(&g.unix_socket).map(PathBuf::from),
        table.clone(),
    )?;
    let mut grpc = None;
    if nonempty(&g.unix_socket).is_some() || nonempty(&g.tcp_listen).is_some() {
        let gopts = cuzk_actors::daemon::grpc::GrpcOptions {
            unix_socket: nonempty(&g.unix_socket).map(PathBuf::from),
            tcp_listen: nonempty(&g.tcp_listen),
            token: nonempty(&g.token),
            allow_remote: g.allow_remote,
            max_message_bytes: usize::try_from(g.max_message_mib << 20).unwrap_or(usize::MAX),
            cancel_on_disconnect: cancel_on_disconnect.clone(),
            filecoin,
        };
        let service = cuzk_actors::daemon::grpc::Service::new(gopts, ready.clone());
        grpc = Some((
            cuzk_actors::daemon::grpc::GrpcServer::start(service.clone())?,
            service,
        ));
    }
    let listen_ms = t.elapsed().as_millis() as u64;

    let t = Instant::now();
    // No SRS is known yet: residency `auto` keeps SRS sets resident on a GPU.
    let (engine, devices) = Engine::from_settings(&settings, None)?;
    let devices_ms = t.elapsed().as_millis() as u64;
    slog::info!(l, "devices open"; "devices" => devices, "ms" => devices_ms);
    let engine = Arc::new(engine);
    let metrics = Arc::new(Metrics::default());
    let jobs = JobTable::new(
        engine.clone(),
        metrics.clone(),
        Duration::from_secs(settings.jobs.retain_s),
    );
    let _ = table.set(jobs.clone());
    server.attach(jobs.clone());
    if let Some((_, service)) = &grpc {
        service.attach(jobs.clone());
    }
    if let Some(addr) = nonempty(&settings.metrics.http_listen) {
        let (e, j, r) = (engine.clone(), jobs.clone(), ready.clone());
        let http = serve_http(
            &addr,
            Arc::new(move |f| j.metrics().render_as(f, &e, Some(&j), r.get())),
        )?;
        slog::info!(l, "metrics over HTTP"; "url" => format!("http://{}/metrics", http.addr));
    }
    // A signal during the start has begun a drain: stay `draining`.
    if !server.drainer().draining() {
        ready.set(State::Ready);
    }
    slog::info!(l, "ready"; "startup_ms" => t0.elapsed().as_millis() as u64, "config_ms" => config_ms, "listen_ms" => listen_ms, "devices_ms" => devices_ms);

    server.wait();
    if let Some((mut g, _)) = grpc {
        g.stop();
    }
    engine.shutdown();
    slog::info!(l, "stopped");
    Ok(())
}
