//! Every message the pipeline's actors exchange, in the order a partition meets them: what the
//! engine asks the dispatcher, what the synthesis pool and each GPU's stages report back to it,
//! what the dispatcher hands an UploadActor, what each stage hands the next, and what the engine
//! asks the SrsLoader. Replies travel on the channel a message carries (the actors answer
//! synchronous callers on the engine's side), so every message's actix result is `()`.
//!
//! The stages hold the dispatcher as [`Recipient`]s of the reports they send ([`StageReports`],
//! and an UploadActor's own [`UploadDone`]), not as its address: a stage knows what it may say,
//! not who listens. The HostPinner's messages stay with it (`resources::pinner`): the resources
//! never import the pipeline.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use crossbeam_channel::Sender;
use cuzk_engine::pipeline::Computed;
use cuzk_engine::prover::Prepared;
use cuzk_srs::Srs;

use crate::pipeline::job::{JobError, JobId, JobOutput, JobSpec};
use crate::pipeline::srs_loader::LoadedSrs;
use crate::pipeline::status::Status;
use crate::pipeline::upload::UploadActor;
use crate::pipeline::work::{PartKey, Ticket};

// The engine → the dispatcher.

/// Wires the uploaders in (they need the dispatcher's address, so they start after it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetUploaders(pub Vec<Addr<UploadActor>>);

/// A job: its id is sent on `id` at once, its result on `reply` when it ends.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Submit {
    pub spec: JobSpec,
    pub reply: Sender<Result<JobOutput, JobError>>,
    pub id: Sender<JobId>,
}

/// Cancels a job; the reply says whether it was still live.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel {
    pub job: JobId,
    pub reply: Sender<bool>,
}

/// Pauses or resumes dispatch to the GPUs (synthesis goes on within the host budget; in-flight
/// work finishes).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetPaused(pub bool);

/// Asks for the dispatcher's [`Status`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct GetStatus(pub Sender<Status>);

/// Drops the resident parameters, on every GPU where nothing is staged, that are `srs` (`None`:
/// only sets no handle holds any more, as after idle eviction): the VRAM reservation is
/// released here and the device copy is freed by the GPU's UploadActor. A GPU with partitions
/// staged keeps them (they use them); the next SRS to be made resident there replaces them.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EvictResident {
    pub srs: Option<Arc<Srs>>,
    pub reply: Option<Sender<Vec<ResidentDropped>>>,
}

/// One GPU's resident parameters dropped by [`EvictResident`].
pub struct ResidentDropped {
    pub gpu: usize,
    /// The VRAM reservation given back (bases and the workers' MSM scratch).
    pub reserved: u64,
    /// The backend's answer once the GPU's UploadActor has freed the device copy (the device
    /// bytes it held).
    pub freed: crossbeam_channel::Receiver<Result<u64, String>>,
}

/// Stops the work: every live job is answered (`EngineStopped`) and its queued partitions are
/// dropped with what they hold; new jobs are refused. The reply (the uploaders, so the caller
/// can have their staging buffers unpinned) goes out once no partition is in flight: a stage
/// that is running ends first and releases what it holds.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    pub reply: Sender<Vec<Addr<UploadActor>>>,
}

// The synthesis pool and the stages → the dispatcher.

/// A partition's synthesis ended (`at`), with its prepared inputs or why it failed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Synthesized {
    pub key: PartKey,
    pub result: Result<Prepared, String>,
    pub at: Instant,
}

/// `gpu`'s uploader is free again (the partition went on to compute, or failed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct UploadDone {
    pub gpu: usize,
    pub key: PartKey,
}

/// The partition's device memory on `gpu` is free: its VRAM reservation goes back.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ComputeDone {
    pub gpu: usize,
    pub key: PartKey,
}

/// A cancelled partition was dropped at some stage: release whatever it still holds.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Dropped {
    pub key: PartKey,
}

/// A partition's proof (with its public inputs), or why it failed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PartitionDone {
    pub key: PartKey,
    pub result: Result<(Proof<Bls12>, Vec<Scalar>), String>,
    /// The device whose failure this was (a device-side stage: upload, kernels, read-back,
    /// self-verification), if it was one.
    pub device_fault: Option<usize>,
}

/// What every stage of a GPU (upload, compute, collect) may report to the dispatcher about a
/// partition leaving it.
#[derive(Clone)]
pub struct StageReports {
    pub compute_done: Recipient<ComputeDone>,
    pub dropped: Recipient<Dropped>,
    pub partition_done: Recipient<PartitionDone>,
}

// The dispatcher (and, at shutdown, the engine) → an UploadActor.

/// A synthesized partition to stage on the uploader's GPU, under a VRAM reservation of `bytes`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Upload {
    pub ticket: Ticket,
    pub prepared: Prepared,
    pub bytes: u64,
}

/// Frees the parameters the backend keeps resident on this GPU (`Pipeline::evict_resident`), on
/// this actor's thread, which owns the GPU's uploads: an evict, sent by the dispatcher once it has
/// dropped its reservation for them and nothing is staged here. Replies with the device bytes the
/// backend freed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct DropResident {
    pub reply: Option<Sender<Result<u64, String>>>,
}

/// Gives the staging buffers back to the HostPinner (at shutdown, once nothing is in flight
/// here): the lease is dropped, which asks the pinner to unpin them; the reply says it was sent.
#[derive(Message)]
#[rtype(result = "()")]
pub struct UnpinStaging {
    pub reply: Sender<()>,
}

// Stage to stage.

/// An UploadActor → a ComputeActor of its GPU: a staged partition was put in the GPU's
/// [`ComputeQueue`](crate::pipeline::compute::ComputeQueue); the worker takes the queue's best
/// partition (highest priority first), not necessarily that one.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Compute;

/// A ComputeActor → its GPU's MsmCollector: a computed partition to collect and assemble.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Collect {
    pub ticket: Ticket,
    pub computed: Computed,
}

// The engine → the SrsLoader.

/// Opens (once) and returns the parameters at `path`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Load {
    pub path: PathBuf,
    pub reply: Sender<Result<Arc<Srs>, String>>,
}

/// Installs parameters built in memory under `path` (where their file would be), replacing
/// nothing: a path already loaded is refused.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Install {
    pub path: PathBuf,
    pub srs: Arc<Srs>,
    pub reply: Sender<Result<(), String>>,
}

/// Drops the loader's handle to `path`; refused while anyone else holds it. Replies with the
/// handle (the caller drops it, once the GPUs' resident copies are dropped too).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Evict {
    pub path: PathBuf,
    pub reply: Sender<Result<Arc<Srs>, String>>,
}

/// Evicts every handle idle for longer than the given time and held by nobody; replies with the
/// evicted paths, least recently used first.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EvictIdle {
    pub idle: Duration,
    pub reply: Option<Sender<Vec<PathBuf>>>,
}

/// Lists the open parameter files, by path.
#[derive(Message)]
#[rtype(result = "()")]
pub struct List(pub Sender<Vec<LoadedSrs>>);
