//! cuzk-engine: circuit synthesis, Groth16 prover math, the [`Backend`] trait (the heavy steps'
//! math) and the [`Pipeline`] trait (the stages the actor pipeline drives), CPU and CUDA backends.
//!
//! ```no_run
//! # use cuzk_engine::{CpuBackend, Prover, circuits::MulChain};
//! # use cuzk_srs::{Srs, OpenOptions};
//! let srs = Srs::open("my.params", &OpenOptions::default())?;
//! let backend = CpuBackend::new();
//! let proofs = Prover::new(&srs, &backend).prove_random(vec![MulChain::random(1000, 3, 7)], &mut rand::thread_rng())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod backend;
pub mod cancel;
pub mod circuits;
pub mod cpu;
pub mod density;
pub mod error;
pub mod fft;
pub mod fixed_base;
pub mod gather;
pub mod gpu;
pub mod packed_witness;
pub mod pipeline;
pub mod prover;
pub mod query_pack;
pub mod r1cs;
pub mod recorded;
pub mod scalar_words;
pub mod setup;
pub mod synth;
pub mod timings;
pub mod verify;

pub use backend::{Backend, Bitmap};
pub use cancel::Cancel;
pub use cpu::CpuBackend;
pub use error::EngineError;
pub use pipeline::{Computed, DeviceMemory, Pipeline, Staged};
pub use prover::{ProofBatch, ProveOptions, Prover};
pub use synth::{synthesize, Assignment};
pub use timings::Timings;
pub use verify::Verifier;
