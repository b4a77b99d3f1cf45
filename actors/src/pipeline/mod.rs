//! The pipeline: the actix runtime that turns jobs into proofs. The [`Engine`](engine::Engine)
//! starts the actors and is the embedder's handle; the dispatcher admits partitions to synthesis
//! (host budget) and places them on GPUs (VRAM budget); the SrsLoader owns the parameter files;
//! per GPU, the UploadActor, the ComputeActors and the MsmCollector run a partition's stages;
//! [`messages`] is everything they say to each other; the timeline records every stage.
//!
//! It uses [`resources`](crate::resources) (the budgets, tiers, pinning and devices it owns) and
//! never the [`daemon`](crate::daemon), which serves it: `EngineConfig` is what the engine takes;
//! turning a configuration file into one is the daemon's business.

pub mod collector;
pub mod compute;
pub mod dispatcher;
pub mod engine;
pub mod job;
pub mod messages;
pub mod srs_loader;
pub mod status;
pub mod synth_workers;
pub mod synthesis;
pub mod timeline;
pub mod turns;
pub mod upload;
pub mod work;
