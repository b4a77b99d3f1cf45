//! Fault injection for tests (feature `faults`; without it every hook is an inlined no-op and
//! [`Faults`] is an empty type, so nothing of this reaches a production build).
//!
//! A [`Faults`] plan holds rules: at a [`Stage`] (synthesis, pinning, upload, each kernel step,
//! read-back, assembly, self-verification), for a chosen job / partition / device, inject a
//! [`Fault`] (a device allocation failure, a kernel launch error, a panic, a self-verification
//! failure) or block until the test releases it. The pipeline's actors call [`Faults::hit`] at
//! their stages; [`backend::Faulty`] wraps a real backend and calls it inside each backend call,
//! knowing the partition from [`scope`]. An engine started by `Engine::start_with_faults` runs
//! the real pipeline with the plan.
//!
//! At the crate's top level, beside the three rooms: a test harness that reaches across them
//! (the pipeline's stages consult it, and it wraps the engine's backends), compiled out of
//! production builds, with an API the tests import as `cuzk_actors::fault`.

#[cfg(feature = "faults")]
pub mod backend;

use crate::pipeline::work::PartKey;

/// Where a fault is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The partition's synthesis and preparation on the synthesis pool.
    Synthesis,
    /// Pinning host memory for the upload (the partition's buffers or the staging buffers).
    Pin,
    /// `Pipeline::stage` / `stage_through` (the host→device copy).
    Upload,
    /// The H step (`compute_h`).
    H,
    /// One MSM (the tail of a query, or H's).
    Msm(Query),
    /// One batch addition (the 0/1 scalars of a query).
    BatchAdd(Query),
    /// `Pipeline::collect` (read-back of the sums).
    Collect,
    /// Assembly of the proof from the sums.
    Assemble,
    /// Self-verification of the assembled proof.
    Verify,
}

/// Which of a proof's five MSMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    H,
    L,
    A,
    BG1,
    BG2,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Synthesis => write!(f, "synthesis"),
            Stage::Pin => write!(f, "pin"),
            Stage::Upload => write!(f, "upload"),
            Stage::H => write!(f, "h"),
            Stage::Msm(q) => write!(f, "msm_{q:?}"),
            Stage::BatchAdd(q) => write!(f, "batch_add_{q:?}"),
            Stage::Collect => write!(f, "collect"),
            Stage::Assemble => write!(f, "assemble"),
            Stage::Verify => write!(f, "verify"),
        }
    }
}

/// What is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The device (or host) allocation fails, as when another process holds the memory.
    Alloc,
    /// A kernel (or copy) launch returns an error.
    Launch,
    /// The call panics.
    Panic,
    /// The proof fails self-verification: at `Verify` the verifier says no; at a kernel step or
    /// `Collect` the step's result is corrupted (a device returning a wrong sum), which
    /// self-verification must catch.
    WrongResult,
    /// The stage waits until [`Faults::release`] (or [`Faults::release_all`]).
    Block,
}

/// The error text an injected fault produces (what a CUDA driver would say, marked injected).
pub fn fault_text(fault: Fault, stage: Stage) -> String {
    match fault {
        Fault::Alloc => format!("{stage}: out of memory (CUDA_ERROR_OUT_OF_MEMORY, injected)"),
        Fault::Launch => format!("{stage}: launch failed (CUDA_ERROR_LAUNCH_FAILED, injected)"),
        Fault::Panic => format!("{stage}: injected panic"),
        Fault::WrongResult => format!("{stage}: injected wrong result"),
        Fault::Block => format!("{stage}: blocked"),
    }
}

/// Where a hook was hit: the partition (if known) and device (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    pub stage: Stage,
    pub key: Option<PartKey>,
    pub device: Option<usize>,
}

#[cfg(feature = "faults")]
mod plan;
#[cfg(feature = "faults")]
pub use plan::{scope, scoped_key, Faults, Rule, RuleId};

/// The inert plan of a build without the `faults` feature.
#[cfg(not(feature = "faults"))]
#[derive(Clone, Default, Debug)]
pub struct Faults;

#[cfg(not(feature = "faults"))]
impl Faults {
    /// Never fires.
    #[inline(always)]
    pub(crate) fn hit(&self, _: Site) -> Result<(), String> {
        Ok(())
    }
    /// Never corrupts.
    #[inline(always)]
    pub fn corrupt(&self, _: Site) -> bool {
        false
    }
}

/// Runs `f` with `key` as the partition a backend call works on (no-op without `faults`).
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub fn scope<T>(_: PartKey, f: impl FnOnce() -> T) -> T {
    f()
}

/// Runs `f`, turning a panic into an error naming `what` (a panic inside a backend call or a
/// stage must fail its partition, never kill the actor's thread and leave the job unanswered).
pub(crate) fn catch<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(format!(
            "{what} panicked: {}",
            cuzk_engine::error::panic_text(&*p)
        ))
    })
}
