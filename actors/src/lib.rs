//! cuzk-actors: the actix pipeline that turns jobs into proofs.
//!
//! ```text
//! submit → Dispatcher (host budget) → synthesis pool → Dispatcher (ready queue, VRAM budget)
//!        → UploadActor[gpu] (HostPinner, backend.stage) → ComputeActor[gpu, worker] (backend.compute
//!          under the GPU mutex) → MsmCollector[gpu] (backend.collect, assemble, verify) → Dispatcher
//! ```
//! Each resource has one owner: pinning is the HostPinner's, the copy stream the UploadActor's,
//! the budgets the Dispatcher's, parameter files the SrsLoader's.

pub mod daemon;
pub mod fault;
#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod log;
pub mod pipeline;
pub mod resources;

pub use pipeline::engine::{Engine, EngineConfig};
pub use pipeline::job::{JobError, JobHandle, JobId, JobOutput, JobSpec, Priority, Randomness};
