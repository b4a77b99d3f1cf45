//! Filecoin proof kinds as engine jobs: a [`ProofRequest`] (the bytes a node's sealing or PoSt
//! pipeline produced) becomes a [`JobSpec`] over the partition circuits filecoin-proofs builds,
//! against the standard parameter file, with its partitions' public inputs checked against
//! filecoin-proofs' `generate_public_inputs`, a priority by kind, and an optional deadline.
//!
//! At the crate's top level, beside the three rooms: it is a client of the pipeline (an
//! [`Engine`] and the [`JobSpec`]s it builds), not part of it (the pipeline proves any circuit),
//! and not the daemon's alone (an embedder proves Filecoin kinds without a daemon; the control
//! socket and the gRPC service use it too).

use std::path::PathBuf;
use std::sync::Arc;

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::{
    params, CircuitSink, FilecoinError, Partitions, ProofKind, ProofRequest, Registered,
};
use cuzk_srs::Srs;

use crate::pipeline::engine::Engine;
use crate::pipeline::job::{JobHandle, JobSpec, Priority};
use crate::EngineError;

/// How Filecoin jobs are scheduled and where their parameters are.
#[derive(Debug, Clone)]
pub struct FilecoinConfig {
    /// The parameter directory (`None`: `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`).
    pub params_dir: Option<PathBuf>,
    /// The scheduling class of each kind.
    pub priority: fn(ProofKind) -> Priority,
}

impl Default for FilecoinConfig {
    fn default() -> Self {
        FilecoinConfig {
            params_dir: None,
            priority: default_priority,
        }
    }
}

/// WinningPoSt above WindowPoSt above PoRep and SnapDeals.
pub fn default_priority(kind: ProofKind) -> Priority {
    match kind.default_rank() {
        2 => Priority::High,
        1 => Priority::Normal,
        _ => Priority::Low,
    }
}

/// A submitted Filecoin job: the engine's handle and what it proves.
pub struct FilecoinJob {
    pub handle: JobHandle,
    pub registered: Registered,
    pub params: PathBuf,
    pub partitions: usize,
}

/// Builds the job of `parsed` against the already loaded `srs`.
pub fn job_spec(
    parsed: Parsed,
    srs: Arc<Srs>,
    priority: Priority,
) -> Result<JobSpec, FilecoinError> {
    let kind = parsed.kind();
    parsed
        .build(ToJob { srs })?
        .map(|spec| spec.priority(priority).kind(kind.name()))
}

struct ToJob {
    srs: Arc<Srs>,
}

impl CircuitSink for ToJob {
    type Out = Result<JobSpec, FilecoinError>;
    fn take<C: Circuit<Scalar> + Send + 'static>(self, parts: Partitions<C>) -> Self::Out {
        JobSpec::with_parallel_witness(
            self.srs,
            parts.circuits,
            parts.public_inputs,
            parts.parallel_witness,
        )
        .map_err(|e| FilecoinError::Invalid {
            what: "job".into(),
            detail: e.to_string(),
        })
    }
}

impl Engine {
    /// Parses `req`, finds and loads its parameter file (a missing one is an error naming the
    /// file and directory), builds the partition circuits and submits them. The request's own
    /// errors are [`EngineError::Filecoin`].
    pub fn submit_filecoin(
        &self,
        req: ProofRequest,
        cfg: &FilecoinConfig,
    ) -> Result<FilecoinJob, EngineError> {
        self.submit_filecoin_with_deadline(req, cfg, None)
    }

    /// As [`Engine::submit_filecoin`], due `deadline` after submission ([`JobSpec::deadline`]:
    /// a proof that ends later is reported as a missed deadline).
    pub fn submit_filecoin_with_deadline(
        &self,
        req: ProofRequest,
        cfg: &FilecoinConfig,
        deadline: Option<std::time::Duration>,
    ) -> Result<FilecoinJob, EngineError> {
        let parsed = req.parse()?;
        self.submit_parsed_with_deadline(parsed, cfg, deadline)
    }

    /// As [`Engine::submit_filecoin`], for a request already parsed.
    pub fn submit_parsed(
        &self,
        parsed: Parsed,
        cfg: &FilecoinConfig,
    ) -> Result<FilecoinJob, EngineError> {
        self.submit_parsed_with_deadline(parsed, cfg, None)
    }

    /// As [`Engine::submit_filecoin_with_deadline`], for a request already parsed.
    pub fn submit_parsed_with_deadline(
        &self,
        parsed: Parsed,
        cfg: &FilecoinConfig,
        deadline: Option<std::time::Duration>,
    ) -> Result<FilecoinJob, EngineError> {
        let registered = parsed.registered();
        let dir = params::dir(cfg.params_dir.as_deref());
        let path = match params::locate(registered, &dir) {
            Ok(path) => path,
            // Parameters set up straight into this engine stand where their file would be.
            Err(missing) => {
                let path = registered.params_file_name().map(|f| dir.join(f))?;
                if !self.has_srs(&path) {
                    return Err(missing.into());
                }
                path
            }
        };
        let srs = self.load_srs(&path)?;
        let spec = job_spec(parsed, srs, (cfg.priority)(registered.kind()))?.deadline(deadline);
        let partitions = spec.partitions.len();
        let handle = self.submit(spec)?;
        Ok(FilecoinJob {
            handle,
            registered,
            params: path,
            partitions,
        })
    }
}

/// The parameter directory a config names.
pub fn params_dir(cfg: &FilecoinConfig) -> PathBuf {
    params::dir(cfg.params_dir.as_deref())
}
