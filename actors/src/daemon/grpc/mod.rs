//! The gRPC service `cuzk.v1.ProvingEngine` (`proto/cuzk/v1/engine.proto`), wire-compatible with
//! the client Curio speaks: served on a unix socket and, optionally, TCP (loopback unless told
//! otherwise; a shared token, when set, is required there as `authorization: Bearer <token>`).
//!
//! Jobs go through the daemon's [`JobTable`](crate::daemon::jobs::JobTable): a client that hangs
//! up while waiting does not lose its job (it finishes, or is cancelled when
//! `grpc.cancel_on_disconnect` says so), and a job is kept for `jobs.retain_s` after it ends.
//! Errors are gRPC statuses that name what was wrong: `INVALID_ARGUMENT` for a request that
//! cannot be proved as it stands, `NOT_FOUND` for an unknown job or a missing parameter file,
//! `FAILED_PRECONDITION` for an evict refused while a job holds the parameters, `UNAVAILABLE`
//! while starting or draining, `UNAUTHENTICATED` for a wrong token. An [`EngineError`](crate::EngineError)
//! becomes a status in one place, `service.rs`'s `status_of`.
//!
//! `service.rs` answers the RPCs; `server.rs` serves them on the listeners; `authority.rs` lets
//! C-core clients' `:authority` (the socket path) through on the unix socket; `verification.rs`
//! runs filecoin-proofs' verifier on the proofs answered (a rejected one is FAILED).

mod authority;
pub mod curio;
mod server;
mod service;
mod verification;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::filecoin::FilecoinConfig;

pub use server::GrpcServer;
pub use service::Service;

#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

/// How the service runs.
#[derive(Clone)]
pub struct GrpcOptions {
    /// The unix socket (mode 0600); `None`: not served on one.
    pub unix_socket: Option<PathBuf>,
    /// `host:port` to serve on TCP; `None`: not served on TCP.
    pub tcp_listen: Option<String>,
    /// Required on TCP (as `authorization: Bearer <token>`) when set.
    pub token: Option<String>,
    /// Serve TCP on a non-loopback address without a token (otherwise refused at start).
    pub allow_remote: bool,
    /// Largest message either way.
    pub max_message_bytes: usize,
    /// Cancel a job whose client hung up while waiting for it (otherwise it finishes and is kept).
    pub cancel_on_disconnect: Arc<AtomicBool>,
    pub filecoin: FilecoinConfig,
}
