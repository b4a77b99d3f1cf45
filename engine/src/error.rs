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

    #[error("cancelled")]
    Cancelled,

    #[error("{0}")]
    Other(String),
}

/// The message of a caught panic (`catch_unwind`'s or `JoinHandle::join`'s payload).
///
/// Takes the payload (`&*p`); given the box itself (`&p`, which is also `Any`), it looks inside it, so
/// either way the message is kept.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(inner) = p.downcast_ref::<Box<dyn std::any::Any + Send>>() {
        return panic_text(&**inner);
    }
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests {
    use super::panic_text;

    fn caught(f: impl FnOnce() + std::panic::UnwindSafe) -> Box<dyn std::any::Any + Send> {
        std::panic::catch_unwind(f).expect_err("the closure panics")
    }

    #[test]
    fn a_caught_panic_keeps_its_text_whether_given_the_payload_or_its_box() {
        let formatted = caught(|| panic!("bad witness at {}", 7));
        assert_eq!(panic_text(&*formatted), "bad witness at 7");
        assert_eq!(panic_text(&formatted), "bad witness at 7");
        let literal = caught(|| panic!("a literal"));
        assert_eq!(panic_text(&*literal), "a literal");
        assert_eq!(panic_text(&literal), "a literal");
        let other = caught(|| std::panic::panic_any(42u32));
        assert_eq!(panic_text(&*other), "(no message)");
    }
}
