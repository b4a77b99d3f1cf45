//! cuzk-actors: the actix pipeline that turns jobs into proofs.
//!
//! ```text
//! submit → Dispatcher (host budget) → synthesis pool → Dispatcher (ready queue, VRAM budget)
//!        → UploadActor[gpu] (HostPinner, backend.stage) → ComputeActor[gpu, worker] (backend.compute
//!          under the GPU mutex) → MsmCollector[gpu] (backend.collect, assemble, verify) → Dispatcher
//! ```
//! Each resource has one owner: pinning is the HostPinner's, the copy stream the UploadActor's,
//! the budgets the Dispatcher's, parameter files the SrsLoader's.

pub mod budget;
pub mod collector;
pub mod compute;
pub mod control;
pub mod cuda_pin;
pub mod devices;
pub mod dispatcher;
pub mod engine;
pub mod fault;
#[cfg(feature = "filecoin")]
pub mod filecoin;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod host_memory;
pub mod job;
pub mod jobs;
pub mod log;
pub mod metrics;
pub mod pinner;
pub mod settings;
pub mod srs_loader;
pub mod synth_workers;
pub mod tier;
pub mod timeline;
pub mod turns;
pub mod upload;
pub mod work;

pub use engine::{Engine, EngineConfig};
pub use job::{JobError, JobHandle, JobId, JobOutput, JobSpec, Priority, Randomness};
