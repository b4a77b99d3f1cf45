//! Prometheus metrics (Prometheus' text format 0.0.4 by default, OpenMetrics where a scraper asks:
//! [`exposition`](crate::daemon::exposition)): counters of jobs by kind and
//! outcome, kept for the daemon's life; the engine's count of missed deadlines by kind (read at
//! each scrape); the stage histograms the timeline keeps (the pipeline
//! feeds them as spans are recorded; they are read here); gauges read from the engine at each
//! scrape (queues, budgets, pinned memory, loaded parameters, GPU busy fraction). Served by the
//! control socket's `Metrics`, gRPC `GetMetrics` and, where `metrics.http_listen` is set, plain
//! HTTP `GET /metrics` ([`serve_http`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::daemon::exposition::{to_classic, Exposition};
use crate::daemon::jobs::JobTable;
use crate::pipeline::engine::Engine;
use crate::pipeline::timeline::{busy_fraction, histogram_family, HistogramFamily, Labels};
use crate::resources::budget::UNLIMITED;
use crate::EngineError;

/// The window over which `cuzk_gpu_busy_fraction` is measured.
pub const BUSY_WINDOW: Duration = Duration::from_secs(60);

fn kind(k: &str) -> Labels {
    vec![("kind".into(), k.into())]
}

/// The daemon's long-lived metrics.
pub struct Metrics {
    started: Instant,
    submitted: Family<Labels, Counter>,
    completed: Family<Labels, Counter>,
    failed: Family<Labels, Counter>,
    cancelled: Family<Labels, Counter>,
    /// Proofs checked by filecoin-proofs' verifier of their kind, by kind and result.
    verified: Family<Labels, Counter>,
    job_seconds: HistogramFamily,
    completed_all: AtomicU64,
    failed_all: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: Instant::now(),
            submitted: Family::default(),
            completed: Family::default(),
            failed: Family::default(),
            cancelled: Family::default(),
            verified: Family::default(),
            job_seconds: histogram_family(),
            completed_all: AtomicU64::new(0),
            failed_all: AtomicU64::new(0),
        }
    }
}

/// What a scrape says besides the engine's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    Draining,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Draining => "draining",
        }
    }
}

/// The daemon's state, shared by its interfaces (`GetStatus.state`, `cuzk_ready`, `ctl ready`).
#[derive(Clone, Default)]
pub struct Readiness(Arc<std::sync::atomic::AtomicU8>);

impl Readiness {
    pub fn set(&self, s: State) {
        self.0.store(s as u8, Ordering::Release);
    }
    pub fn get(&self) -> State {
        match self.0.load(Ordering::Acquire) {
            0 => State::Starting,
            1 => State::Ready,
            _ => State::Draining,
        }
    }
}

impl Metrics {
    pub fn submitted(&self, k: &str) {
        self.submitted.get_or_create(&kind(k)).inc();
    }

    /// A proof of kind `k` was checked by filecoin-proofs' verifier: `result` is `valid`,
    /// `invalid` or `skipped` (no verifying key to check it with).
    pub fn verified(&self, k: &str, result: &str) {
        self.verified
            .get_or_create(&vec![
                ("kind".into(), k.into()),
                ("result".into(), result.into()),
            ])
            .inc();
    }

    /// A job of kind `k` ended (`completed`, `failed` or `cancelled`) after `secs` seconds.
    pub fn ended(&self, k: &str, outcome: &str, secs: f64) {
        match outcome {
            "completed" => {
                self.completed.get_or_create(&kind(k)).inc();
                self.job_seconds.get_or_create(&kind(k)).observe(secs);
                self.completed_all.fetch_add(1, Ordering::Relaxed);
            }
            "cancelled" => {
                self.cancelled.get_or_create(&kind(k)).inc();
            }
            _ => {
                self.failed.get_or_create(&kind(k)).inc();
                self.failed_all.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn totals(&self) -> (u64, u64) {
        (
            self.completed_all.load(Ordering::Relaxed),
            self.failed_all.load(Ordering::Relaxed),
        )
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The text exposition in Prometheus' text format 0.0.4 (what `GetMetrics` and the control
    /// socket answer): [`Metrics::render_as`] in [`Exposition::Classic`].
    pub fn render(
        &self,
        engine: &Engine,
        jobs: Option<&JobTable>,
        state: State,
    ) -> Result<String, EngineError> {
        self.render_as(Exposition::Classic, engine, jobs, state)
    }

    /// The text exposition in `format`: these counters, the timeline's stage histograms and gauges
    /// read from `engine` now (and from `jobs`, where the daemon tracks them).
    pub fn render_as(
        &self,
        format: Exposition,
        engine: &Engine,
        jobs: Option<&JobTable>,
        state: State,
    ) -> Result<String, EngineError> {
        let mut r = Registry::with_prefix("cuzk");
        r.register(
            "proofs_submitted",
            "Proof jobs submitted, by kind",
            self.submitted.clone(),
        );
        r.register(
            "proofs_verified",
            "Proofs checked by filecoin-proofs' verifier of their kind (verify_seal, ...), by kind and result (valid, invalid, skipped)",
            self.verified.clone(),
        );
        r.register(
            "proofs_completed",
            "Proof jobs that returned a proof, by kind",
            self.completed.clone(),
        );
        r.register(
            "proofs_failed",
            "Proof jobs that failed, by kind",
            self.failed.clone(),
        );
        r.register(
            "proofs_cancelled",
            "Proof jobs cancelled, by kind",
            self.cancelled.clone(),
        );
        r.register(
            "job_seconds",
            "Submission to proof of completed jobs, by kind",
            self.job_seconds.clone(),
        );
        let missed: Family<Labels, Counter> = Family::default();
        for (k, n) in engine.deadlines_missed() {
            missed.get_or_create(&kind(&k)).inc_by(n);
        }
        r.register(
            "deadlines_missed",
            "Proof jobs that ended after the deadline their request carried, by kind",
            missed,
        );
        r.register(
            "stage_seconds",
            "Time of each pipeline stage of each partition (synth, queue, upload, compute, collect, the GPU steps ...)",
            engine.timeline().stage_histograms().clone(),
        );

        let st = engine.status()?;
        let (pinned, registrations) = engine.pinned()?;
        let gauge = |v: i64| {
            let g: Gauge = Gauge::default();
            g.set(v);
            g
        };
        let fgauge = |v: f64| {
            let g: Gauge<f64, AtomicU64> = Gauge::default();
            g.set(v);
            g
        };
        let up = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        r.register(
            "ready",
            "1 once the engine can prove (state starting, ready or draining in the label)",
            {
                let f: Family<Labels, Gauge> = Family::default();
                f.get_or_create(&vec![("state".into(), state.name().into())])
                    .set((state != State::Starting) as i64);
                f
            },
        );
        r.register(
            "uptime_seconds",
            "Seconds since the daemon started",
            gauge(up(self.uptime().as_secs())),
        );
        let queues: Family<Labels, Gauge> = Family::default();
        queues
            .get_or_create(&vec![("queue".into(), "synthesis".into())])
            .set(up(st.queued_synthesis as u64));
        queues
            .get_or_create(&vec![("queue".into(), "dispatch".into())])
            .set(up(st.queued_dispatch as u64));
        r.register(
            "queue_depth",
            "Partitions waiting: for synthesis (host budget), for a GPU (dispatch)",
            queues,
        );
        r.register(
            "partitions_in_flight",
            "Partitions holding memory: synthesizing, waiting, staged or computing",
            gauge(up(st.in_flight as u64)),
        );
        r.register(
            "jobs_live",
            "Jobs in the engine that have not ended",
            gauge(up(st.jobs as u64)),
        );
        if let Some(t) = jobs {
            let live: Family<Labels, Gauge> = Family::default();
            for j in t.live() {
                live.get_or_create(&kind(&j.kind)).inc();
            }
            r.register(
                "jobs_live_by_kind",
                "Tracked jobs that have not ended, by kind",
                live,
            );
        }
        let (cap, res, hw) = (
            Family::<Labels, Gauge>::default(),
            Family::<Labels, Gauge>::default(),
            Family::<Labels, Gauge>::default(),
        );
        for b in st.vram.iter().chain(std::iter::once(&st.host)) {
            let l = vec![("budget".into(), b.name.clone())];
            cap.get_or_create(&l).set(up(if b.capacity >= UNLIMITED {
                0
            } else {
                b.capacity
            }));
            res.get_or_create(&l).set(up(b.reserved));
            hw.get_or_create(&l).set(up(b.high_water));
        }
        r.register(
            "budget_capacity_bytes",
            "Budget capacity (vramN per GPU, host); 0 = unlimited",
            cap,
        );
        r.register("budget_reserved_bytes", "Bytes reserved now", res);
        r.register(
            "budget_high_water_bytes",
            "Most bytes ever reserved at once",
            hw,
        );
        r.register(
            "pinned_bytes",
            "Host bytes registered (pinned) with the driver",
            gauge(up(pinned as u64)),
        );
        r.register(
            "pin_registrations",
            "Live pinned registrations",
            gauge(up(registrations as u64)),
        );
        let loaded = engine.loaded_srs()?;
        r.register(
            "srs_loaded",
            "Parameter files open",
            gauge(up(loaded.len() as u64)),
        );
        let bytes: Family<Labels, Gauge> = Family::default();
        for s in &loaded {
            bytes
                .get_or_create(&vec![("file".into(), s.file_name())])
                .set(up(s.bytes));
        }
        r.register(
            "srs_loaded_bytes",
            "Point bytes of each open parameter file",
            bytes,
        );
        let now = engine.timeline().us(Instant::now());
        let from = now.saturating_sub(BUSY_WINDOW.as_micros() as u64);
        let spans = engine.timeline().spans_where(|s| s.end_us > from);
        let busy: Family<Labels, Gauge<f64, AtomicU64>> = Family::default();
        for gpu in 0..st.vram.len() {
            busy.get_or_create(&vec![("gpu".into(), gpu.to_string())])
                .set(busy_fraction(&spans, gpu, from, now));
        }
        r.register(
            "gpu_busy_fraction",
            "Fraction of the last 60 s each GPU (or the CPU backend, gpu 0) ran proving steps",
            busy,
        );
        r.register(
            "process_start_time_seconds",
            "Unix time the daemon started",
            {
                let since = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                fgauge((since.saturating_sub(self.uptime())).as_secs_f64())
            },
        );
        let mut out = String::new();
        encode(&mut out, &r)
            .map_err(|e| EngineError::io("metrics", format!("encoding metrics: {e}")))?;
        Ok(match format {
            Exposition::OpenMetrics => out,
            Exposition::Classic => to_classic(&out),
        })
    }
}

/// What the HTTP endpoint renders on each request, in the format the request's `Accept` asks for.
pub type Render = Arc<dyn Fn(Exposition) -> Result<String, EngineError> + Send + Sync>;

/// A running `/metrics` endpoint.
pub struct HttpServer {
    pub addr: SocketAddr,
}

/// Serves `GET /metrics` on `addr` (one thread; each request handled and closed; anything else is
/// 404, a malformed request 400). Returns once the socket is bound.
pub fn serve_http(addr: &str, render: Render) -> Result<HttpServer, EngineError> {
    let listen = |e: std::io::Error| {
        EngineError::io(
            "metrics.http_listen",
            format!("metrics.http_listen {addr}: {e}"),
        )
    };
    let listener = TcpListener::bind(addr).map_err(listen)?;
    let bound = listener.local_addr().map_err(listen)?;
    std::thread::Builder::new()
        .name("cuzk-metrics-http".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(s) = conn else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
                let _ = answer(s, &render);
            }
        })
        .map_err(|e| EngineError::Start(format!("starting the metrics thread: {e}")))?;
    Ok(HttpServer { addr: bound })
}

fn answer(s: TcpStream, render: &Render) -> std::io::Result<()> {
    let mut reader = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    reader.by_ref().take(8192).read_line(&mut line)?;
    // Read the headers (bounded), keeping `Accept`.
    let mut header = String::new();
    let mut accept = None;
    for _ in 0..100 {
        header.clear();
        if reader.by_ref().take(8192).read_line(&mut header)? == 0
            || header == "\r\n"
            || header == "\n"
        {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.trim().eq_ignore_ascii_case("accept") {
                accept = Some(v.trim().to_string());
            }
        }
    }
    let format = Exposition::from_accept(accept.as_deref());
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, ctype, body) = match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => match render(format) {
            Ok(text) => ("200 OK", format.content_type(), text),
            Err(e) => ("503 Service Unavailable", "text/plain", format!("{e}\n")),
        },
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "only /metrics is served here\n".to_string(),
        ),
        ("", _) => (
            "400 Bad Request",
            "text/plain",
            "malformed request line\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET /metrics\n".to_string(),
        ),
    };
    let mut w = s;
    write!(w, "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())?;
    w.flush()
}
