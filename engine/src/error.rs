//! Errors of the engine: each names what failed and where.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("synthesis failed in circuit {circuit}: {source}")]
    Synthesis {
        circuit: usize,
        source: bellperson::SynthesisError,
    },

    #[error(
        "circuit {circuit} is unsatisfied: constraint {row} has a·b ≠ c (a={a}, b={b}, c={c})"
    )]
    Unsatisfied {
        circuit: usize,
        row: usize,
        a: String,
        b: String,
        c: String,
    },

    #[error("circuit {circuit} does not fit the parameters: {what}")]
    ShapeMismatch { circuit: usize, what: String },

    #[error("partition circuits differ in shape: circuit {circuit} {what}")]
    BatchMismatch { circuit: usize, what: String },

    #[error("parameters: {0}")]
    Srs(#[from] cuzk_srs::SrsError),

    #[error("backend {backend}: {what}")]
    Backend { backend: String, what: String },

    #[error("proof {index} failed self-verification")]
    SelfVerify { index: usize },

    #[error("verification error: {0}")]
    Verify(String),

    #[error("circuit {circuit} does not match its recording: {what}")]
    RecordingMismatch { circuit: usize, what: String },

    #[error("recording refused: {what}")]
    RecordingParams { what: String },

    #[error("recording file {path}: {what}")]
    RecordingFile {
        path: std::path::PathBuf,
        what: String,
    },

    #[error("recording: {what}")]
    Recording { what: String },

    #[error("{0}")]
    Other(String),
}

/// The message of a caught panic (`catch_unwind`'s payload).
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
