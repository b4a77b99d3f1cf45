//! Cancellation of a partition's work: a [`Cancel`] token travels with the partition
//! (`ProveOptions::cancel` → `Prepared::cancel`) and the long steps check it at their boundaries
//! (`run_steps` before H and before each MSM chunk, the CPU FFTs between and within their rounds;
//! a GPU between its stages), returning [`EngineError::Cancelled`] once it is set. The actor
//! pipeline hands each partition its job's cancel flag, so a cancelled job's running partition
//! gives its cores (or its GPU) back at the next boundary.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::EngineError;

/// A shared flag: set once, and every holder's next [`check`](Cancel::check) fails. The default
/// is a fresh flag nobody else holds (never set unless [`cancel`](Cancel::cancel) is called).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A fresh, unset token.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token over a flag the caller already shares (a job's cancel flag).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(flag)
    }

    /// Sets the flag: every holder stops at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `Err(EngineError::Cancelled)` once the flag is set.
    pub fn check(&self) -> Result<(), EngineError> {
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }
}
