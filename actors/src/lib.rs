//! cuzk-actors: the actix pipeline that turns jobs into proofs, and the daemon that serves it.
//!
//! ```text
//! submit → Dispatcher (host budget) → synthesis pool → Dispatcher (ready queue, VRAM budget)
//!        → UploadActor[gpu] (HostPinner, backend.stage) → ComputeActor[gpu, worker] (backend.compute
//!          under the GPU mutex) → MsmCollector[gpu] (backend.collect, assemble, verify) → Dispatcher
//! ```
//! Each resource has one owner: pinning is the HostPinner's, the copy stream the UploadActor's,
//! the budgets the Dispatcher's, parameter files the SrsLoader's.
//!
//! The crate is three rooms, and what each may touch:
//!
//! ```text
//! daemon/      settings, jobs, metrics, control/, grpc/         may use pipeline, resources
//!   │
//!   ▼
//! pipeline/    engine, dispatcher/ (admission, placement,       may use resources
//!   │          residency, failover, status), messages, upload,
//!   │          compute, collector, synthesis, synth_workers,
//!   │          turns, srs_loader, job, work, status, timeline
//!   ▼
//! resources/   budget, tier, host_memory, pinner, cuda_pin,     uses neither
//!              devices
//! ```
//! - [`pipeline`]: the actix runtime. [`Engine`] starts it from an [`EngineConfig`] and is the
//!   embedder's handle.
//! - [`resources`]: what the pipeline budgets and owns (budgets, tiers, host memory, pinning,
//!   the devices it opens).
//! - [`daemon`]: what serves the engine as a process: [`daemon::settings`] (a TOML file and the
//!   environment, turned into an `EngineConfig`; `Engine::from_settings`), the job table,
//!   metrics, the control socket and the gRPC service.
//!
//! The pipeline and the resources never import the daemon, and the resources never import the
//! pipeline (`tests/rooms.rs` checks both). Beside the rooms: [`EngineError`] (`error.rs`, what
//! the public API returns when a call fails), [`log`] (every room logs
//! through it), [`fault`] (the tests' fault injection, which reaches across the pipeline's stages and
//! the backends) and [`filecoin`] (Filecoin proof kinds as jobs: a client of the pipeline that
//! embedders and the daemon both use).
//!
//! The embedder's API is re-exported here; the `cuzk` binary (crate cuzk-cli, `cli/`) and the
//! tests also use the daemon's modules and the pipeline's public ones (`job`, `status`,
//! `timeline`, `work`).

pub mod daemon;
mod error;
pub mod fault;
#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod log;
pub mod pipeline;
pub mod resources;

pub use error::EngineError;
pub use pipeline::engine::{Engine, EngineConfig, Evicted, GpuFreed, SHUTDOWN_WAIT};
pub use pipeline::job::{JobError, JobHandle, JobId, JobOutput, JobSpec, Priority, Randomness};
pub use pipeline::srs_loader::LoadedSrs;
pub use pipeline::status::{DeviceStatus, Status};
pub use resources::pinner::{CountingPin, PinApi};
