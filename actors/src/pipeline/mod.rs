//! The pipeline: the actix runtime that turns jobs into proofs. The [`Engine`](crate::Engine)
//! starts the actors and is the embedder's handle; the dispatcher admits partitions to synthesis
//! (host budget), runs their synthesis on the synthesis workers and places them on GPUs (VRAM
//! budget, tier, residency, failover); the SrsLoader owns the parameter files; per GPU, the
//! UploadActor, the ComputeActors and the MsmCollector run a partition's stages. `messages.rs`
//! is everything they say to each other; the [`timeline`] records every stage; [`status`] is
//! what the engine reports of itself.
//!
//! It uses [`resources`](crate::resources) (the budgets, tiers, pinning and devices it owns) and
//! never the [`daemon`](crate::daemon), which serves it: [`EngineConfig`](crate::EngineConfig) is
//! what the engine takes; turning a configuration file into one is the daemon's business. Only
//! what embedders and the daemon use is public ([`job`], [`status`], [`timeline`], [`work`], and
//! the engine through the crate root).

pub(crate) mod collector;
pub(crate) mod compute;
pub(crate) mod dispatcher;
pub(crate) mod engine;
pub(crate) mod held_pin;
pub mod job;
pub(crate) mod messages;
pub(crate) mod srs_loader;
pub mod status;
pub(crate) mod synth_workers;
pub(crate) mod synthesis;
pub mod timeline;
pub(crate) mod turns;
pub(crate) mod upload;
pub mod work;
