//! Structured logs (slog): one process-wide logger, terminal or JSON lines on stderr, its level
//! from `log.level`. Lines about a job carry `job`, `partition`, `kind` and `gpu` (null where not
//! known or not relevant). Until [`init`] runs, the logger writes terminal lines at `info`.
//! cuzk-engine writes its diagnostics through the `log` facade; [`bridge`] (called by
//! `Engine::start`, unless the embedding program installed a `log` logger of its own) forwards
//! them here with `component = engine` and their target. [`log_panics`] makes a panic one more line
//! (the daemon's JSON mode).
//!
//! At the crate's top level, beside the three rooms, because all of them log through it and it
//! needs none of them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use slog::{o, Drain, Level, Logger, OwnedKVList, Record};

use crate::EngineError;

static LOGGER: OnceLock<Logger> = OnceLock::new();
/// The level lines must reach (slog's `Level::as_usize`: 1 critical … 6 trace); changeable live.
static LEVEL: AtomicUsize = AtomicUsize::new(4);

/// Passes lines at or above [`LEVEL`].
struct DynLevel<D>(D);

impl<D: Drain> Drain for DynLevel<D> {
    type Ok = Option<D::Ok>;
    type Err = D::Err;
    fn log(&self, r: &Record, v: &OwnedKVList) -> Result<Self::Ok, Self::Err> {
        if r.level().as_usize() <= LEVEL.load(Ordering::Relaxed) {
            self.0.log(r, v).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Changes the level of the running logger.
pub fn set_level(level: Level) {
    LEVEL.store(level.as_usize(), Ordering::Relaxed);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Terminal,
    Json,
}

impl std::str::FromStr for Format {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, EngineError> {
        match s {
            "terminal" | "term" => Ok(Format::Terminal),
            "json" => Ok(Format::Json),
            other => Err(EngineError::config(
                "log.format",
                format!("log.format `{other}`: choose terminal or json"),
            )),
        }
    }
}

/// The level `log.level` names; an unknown name is a [`EngineError::Config`] about that key.
pub fn parse_level(s: &str) -> Result<Level, EngineError> {
    match s {
        "trace" => Ok(Level::Trace),
        "debug" => Ok(Level::Debug),
        "info" => Ok(Level::Info),
        "warn" | "warning" => Ok(Level::Warning),
        "error" => Ok(Level::Error),
        "critical" => Ok(Level::Critical),
        other => Err(EngineError::config(
            "log.level",
            format!("log.level `{other}`: choose trace, debug, info, warn, error or critical"),
        )),
    }
}

fn build(format: Format, level: Level) -> Logger {
    set_level(level);
    match format {
        Format::Json => {
            let json = slog_json::Json::new(std::io::stderr())
                .add_default_keys()
                .set_newlines(true)
                .build();
            Logger::root(DynLevel(Mutex::new(json).fuse()).fuse(), o!())
        }
        Format::Terminal => {
            let dec = slog_term::PlainSyncDecorator::new(std::io::stderr());
            let term = slog_term::FullFormat::new(dec).build();
            Logger::root(DynLevel(term.fuse()).fuse(), o!())
        }
    }
}

/// Sets the process's logger; `false` if one was already in use (the first stays, at `level`).
pub fn init(format: Format, level: Level) -> bool {
    let fresh = LOGGER.set(build(format, level)).is_ok();
    set_level(level);
    fresh
}

pub fn logger() -> &'static Logger {
    LOGGER.get_or_init(|| build(Format::Terminal, Level::Info))
}

struct Bridge;

impl log::Log for Bridge {
    fn enabled(&self, m: &log::Metadata) -> bool {
        slog_level(m.level()).as_usize() <= LEVEL.load(Ordering::Relaxed)
    }
    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let l = logger();
        let target = r.target().to_string();
        match r.level() {
            log::Level::Error => {
                slog::error!(l, "{}", r.args(); "component" => "engine", "target" => target)
            }
            log::Level::Warn => {
                slog::warn!(l, "{}", r.args(); "component" => "engine", "target" => target)
            }
            log::Level::Info => {
                slog::info!(l, "{}", r.args(); "component" => "engine", "target" => target)
            }
            log::Level::Debug => {
                slog::debug!(l, "{}", r.args(); "component" => "engine", "target" => target)
            }
            log::Level::Trace => {
                slog::trace!(l, "{}", r.args(); "component" => "engine", "target" => target)
            }
        }
    }
    fn flush(&self) {}
}

fn slog_level(l: log::Level) -> Level {
    match l {
        log::Level::Error => Level::Error,
        log::Level::Warn => Level::Warning,
        log::Level::Info => Level::Info,
        log::Level::Debug => Level::Debug,
        log::Level::Trace => Level::Trace,
    }
}

/// Forwards the `log` facade (cuzk-engine's diagnostics) into this logger; `false` if another
/// `log` logger was installed first (it stays).
pub fn bridge() -> bool {
    static BRIDGE: Bridge = Bridge;
    let ok = log::set_logger(&BRIDGE).is_ok();
    if ok {
        log::set_max_level(log::LevelFilter::Trace);
    }
    ok
}

/// From now on a panic is written as one line of this logger (error level, `component = panic`:
/// its message, `location` and `thread`, and `backtrace` where `RUST_BACKTRACE` asks for one)
/// instead of the default hook's raw text on stderr, which would break JSON lines. The panic then
/// unwinds as before: a caught one fails its job with the same message, an uncaught one ends its
/// thread.
pub fn log_panics() {
    std::panic::set_hook(Box::new(|info| {
        let message = cuzk_engine::error::panic_text(info.payload());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        let bt = std::backtrace::Backtrace::capture();
        let backtrace =
            (bt.status() == std::backtrace::BacktraceStatus::Captured).then(|| bt.to_string());
        slog::error!(component("panic"), "panicked: {}", message;
            "location" => location, "thread" => thread, "backtrace" => backtrace);
    }));
}

/// A logger whose lines carry a job's fields.
pub fn job(job: u64, partition: Option<usize>, kind: &str, gpu: Option<usize>) -> Logger {
    logger()
        .new(o!("job" => job, "partition" => partition, "kind" => kind.to_string(), "gpu" => gpu))
}

/// A logger for one part of the program (`component`: daemon, grpc, engine, ...).
pub fn component(name: &'static str) -> Logger {
    logger().new(o!("component" => name))
}
