//! What travels between the actors with a partition.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_srs::Srs;

use crate::pipeline::job::{JobId, Priority};

/// A partition's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartKey {
    pub job: JobId,
    pub partition: usize,
}

/// What every stage carries along: the SRS, the randomness, the job's priority and cancel flag.
#[derive(Clone)]
pub struct Ticket {
    pub key: PartKey,
    /// The job's class: a stage's queue takes its highest-priority partition first.
    pub priority: Priority,
    pub srs: Arc<Srs>,
    pub r: Scalar,
    pub s: Scalar,
    pub cancelled: Arc<AtomicBool>,
}

impl Ticket {
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

/// A stage's error as a job reports it: the stage and the device named (the partition is named
/// by `JobError::Failed`).
pub fn failed_at(stage: &str, gpu: usize, backend: &str, what: impl std::fmt::Display) -> String {
    format!("{stage} on device {gpu} ({backend}): {what}")
}
