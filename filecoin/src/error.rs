//! Errors of the Filecoin layer: each names what was wrong and where.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// The request's bytes could not be read as what they claim to be.
    #[error("malformed {what}: {detail}")]
    Malformed { what: String, detail: String },
    /// A well-formed request that this proof kind cannot take.
    #[error("invalid {what}: {detail}")]
    Invalid { what: String, detail: String },
    #[error("{0}: not a sector size with registered proofs (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)")]
    SectorSize(u64),
    #[error("parameters for {proof}: expected file {file} in {dir} (FIL_PROOFS_PARAMETER_CACHE), not found")]
    MissingParams {
        proof: String,
        file: String,
        dir: PathBuf,
    },
    #[error("parameters {file}: {detail}")]
    Params { file: PathBuf, detail: String },
    /// filecoin-proofs refused something while building circuits or inputs.
    #[error("{context}: {detail}")]
    Proofs { context: String, detail: String },
    #[error(transparent)]
    Engine(#[from] cuzk_engine::EngineError),
}

impl FilecoinError {
    pub(crate) fn malformed(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        FilecoinError::Malformed {
            what: what.into(),
            detail: detail.to_string(),
        }
    }
    pub(crate) fn invalid(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        FilecoinError::Invalid {
            what: what.into(),
            detail: detail.to_string(),
        }
    }
    /// Wraps an error from filecoin-proofs / storage-proofs with what cuzk was doing.
    pub(crate) fn proofs(context: impl Into<String>) -> impl FnOnce(anyhow::Error) -> Self {
        let context = context.into();
        move |e| FilecoinError::Proofs {
            context,
            detail: format!("{e:#}"),
        }
    }
}
