//! What serves the engine as a process: the settings (TOML file and environment, turned into an
//! `EngineConfig`), the job table shared by its interfaces, the Prometheus metrics, the control
//! socket and the gRPC service Curio speaks.
//!
//! The daemon uses the [`pipeline`](crate::pipeline) and the [`resources`](crate::resources);
//! neither of them imports anything from here (`actors/tests/rooms.rs` checks it).

pub mod control;
pub mod exposition;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod jobs;
pub mod metrics;
pub mod settings;
