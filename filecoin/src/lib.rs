//! cuzk-filecoin: Filecoin's proof kinds from the inputs storage nodes produce, proved by cuzk.
//!
//! Each kind (a [`Compound`], the seam per kind after storage-proofs' `CompoundProof`) turns its
//! real input into the partition circuits and public inputs filecoin-proofs itself would build
//! (`CompoundProof::circuit`, `generate_public_inputs`) — bellperson's prover is never called —
//! names the standard `.params` file it is proved against, gives its blank circuit for a setup,
//! and runs filecoin-proofs' own verifier of the kind:
//!
//! | kind | input | partitions |
//! |---|---|---|
//! | PoRep C2 | `SealCommitPhase1Output` JSON (filecoin-proofs-api) | 1 (≤ 512 MiB), 10 (32/64 GiB) |
//! | SnapDeals | bincode `PartitionProof`s + `comm_r_old`, `comm_r_new`, `comm_d_new` | 1, 4 or 16 |
//! | WindowPoSt | one partition's bincode `FallbackPoStSectorProof`s, randomness, index, prover id | 1 |
//! | WinningPoSt | the sector's bincode `FallbackPoStSectorProof`, randomness, prover id | 1 |
//!
//! A [`ProofRequest`] is handed to a [`CircuitSink`] (the engine's job builder, or a test's
//! reference prover), which receives the typed circuits; [`verify`] runs filecoin-proofs' own
//! verifiers over the resulting bytes (192 per partition, in order).

pub mod compound;
pub mod error;
pub mod kind;
pub mod layout;
pub mod params;
pub mod porep;
pub mod post;
pub mod prove;
pub mod registered;
pub mod request;
pub mod sample;
mod shape;
pub mod sink;
pub mod snap;
pub mod synth_c1;
pub mod synth_post;
pub mod synth_snap;
pub mod verify;

pub use compound::Compound;
pub use error::FilecoinError;
pub use kind::ProofKind;
pub use registered::Registered;
pub use request::ProofRequest;
pub use sink::{BlankSink, CircuitSink, Partitions, Remake};

/// Bytes of one partition's Groth16 proof (compressed A ‖ B ‖ C).
pub const PARTITION_PROOF_BYTES: usize = 192;
