//! [`EngineError`]: what the engine's public API returns when a call fails (`Engine::start`,
//! `submit`, `load_srs`, `status`, `install_srs`, `evict_srs…`, `Engine::from_settings`,
//! `Settings::load`, opening devices, the daemon's servers and client). Each variant names what
//! failed; its text is the message the call gave before it was typed, so logs, control-socket
//! replies and gRPC status messages read as they did. The daemon maps it to a reply in one place
//! each (`daemon::grpc::service::status_of`, `daemon::control::server::reply_of`).
//!
//! Not to be confused with [`cuzk_engine::EngineError`] (the backends' and the prover's error),
//! which it wraps as [`EngineError::Engine`]. A job's own failure stays a
//! [`JobError`](crate::JobError).

use std::path::PathBuf;

/// Why a call on the engine (or the daemon around it) failed.
#[derive(thiserror::Error, Debug)]
pub enum EngineError {
    /// A setting, or the configuration as a whole: `key` names the setting (`log.level`,
    /// `engine.gpus`, …), or the file or `config` where no single key is at fault.
    #[error("{detail}")]
    Config { key: String, detail: String },
    /// The devices could not be selected or opened (`engine.gpus`, CUDA, the backend choice).
    #[error("{0}")]
    Devices(String),
    /// The parameter file at `path` could not be loaded, installed or evicted (an evict is
    /// refused while a job holds the parameters).
    #[error("{detail}")]
    Srs { path: PathBuf, detail: String },
    /// The engine's actors are gone (shut down, or one of them stopped), or one did not answer
    /// in time; says which answer was lost.
    #[error("{0}")]
    Stopped(String),
    /// The engine's queue cannot take a job now (its mailbox is full); the job was not submitted.
    #[error("{0}")]
    Busy(String),
    /// A request was refused as given: a malformed job, a reload of keys that need a restart.
    #[error("{0}")]
    Rejected(String),
    /// No job `job` is known: never submitted here, or forgotten `retain_s` seconds after it
    /// ended (`jobs.retain_s`).
    #[error(
        "job {job} is unknown (never submitted here, or forgotten {retain_s} s after it ended)"
    )]
    UnknownJob { job: crate::JobId, retain_s: u64 },
    /// The engine could not start (the actor thread, the actors, budgets that do not match the
    /// devices), or a thread or runtime of the daemon could not.
    #[error("{0}")]
    Start(String),
    /// A socket, listener or file of the daemon, or the metrics text (`what` says which).
    #[error("{detail}")]
    Io { what: String, detail: String },
    /// A Filecoin request: parsing it, its parameter file, its circuits.
    #[cfg(feature = "filecoin")]
    #[error(transparent)]
    Filecoin(#[from] cuzk_filecoin::FilecoinError),
    /// The backends or the prover.
    #[error(transparent)]
    Engine(#[from] cuzk_engine::EngineError),
}

impl EngineError {
    /// A configuration error about `key`.
    pub fn config(key: impl Into<String>, detail: impl Into<String>) -> EngineError {
        EngineError::Config {
            key: key.into(),
            detail: detail.into(),
        }
    }

    /// A failure of the daemon's socket, listener or file `what`.
    pub fn io(what: impl Into<String>, detail: impl Into<String>) -> EngineError {
        EngineError::Io {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// A failure of the parameter file at `path`.
    pub fn srs(path: impl Into<PathBuf>, detail: impl Into<String>) -> EngineError {
        EngineError::Srs {
            path: path.into(),
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_reads_as_the_message_it_carries() {
        let cases = [
            EngineError::config("log.level", "log.level `x`: choose trace"),
            EngineError::Devices("engine.gpus [7]: 1 GPU visible".into()),
            EngineError::srs("/p/a.params", "/p/a.params: truncated"),
            EngineError::Stopped("engine stopped".into()),
            EngineError::Busy("engine not accepting jobs: mailbox full".into()),
            EngineError::Rejected("2 circuits but 1 public-input vectors".into()),
            EngineError::UnknownJob {
                job: 3,
                retain_s: 60,
            },
            EngineError::Start("the actor system failed to start".into()),
            EngineError::io("control socket", "binding /s: denied"),
        ];
        let texts: Vec<String> = cases.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            texts,
            [
                "log.level `x`: choose trace",
                "engine.gpus [7]: 1 GPU visible",
                "/p/a.params: truncated",
                "engine stopped",
                "engine not accepting jobs: mailbox full",
                "2 circuits but 1 public-input vectors",
                "job 3 is unknown (never submitted here, or forgotten 60 s after it ended)",
                "the actor system failed to start",
                "binding /s: denied",
            ]
        );
    }
}
