//! Structured logs (slog): one process-wide logger, terminal or JSON lines on stderr, its level
//! from `log.level`. Lines about a job carry `job`, `partition`, `kind` and `gpu` (null where not
//! known or not relevant). Until [`init`] runs, the logger writes terminal lines at `info`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use slog::{o, Drain, Level, Logger, OwnedKVList, Record};

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
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "terminal" | "term" => Ok(Format::Terminal),
            "json" => Ok(Format::Json),
            other => Err(format!("log.format `{other}`: choose terminal or json")),
        }
    }
}

pub fn parse_level(s: &str) -> Result<Level, String> {
    match s {
        "trace" => Ok(Level::Trace),
        "debug" => Ok(Level::Debug),
        "info" => Ok(Level::Info),
        "warn" | "warning" => Ok(Level::Warning),
        "error" => Ok(Level::Error),
        "critical" => Ok(Level::Critical),
        other => Err(format!("log.level `{other}`: choose trace, debug, info, warn, error or critical")),
    }
}

fn build(format: Format, level: Level) -> Logger {
    set_level(level);
    match format {
        Format::Json => {
            let json = slog_json::Json::new(std::io::stderr()).add_default_keys().set_newlines(true).build();
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

/// A logger whose lines carry a job's fields.
pub fn job(job: u64, partition: Option<usize>, kind: &str, gpu: Option<usize>) -> Logger {
    logger().new(o!("job" => job, "partition" => partition, "kind" => kind.to_string(), "gpu" => gpu))
}

/// A logger for one part of the program (`component`: daemon, grpc, engine, ...).
pub fn component(name: &'static str) -> Logger {
    logger().new(o!("component" => name))
}
