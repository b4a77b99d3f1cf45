//! cuzk-engine: circuit synthesis, Groth16 prover math, the `Backend` trait, CPU and CUDA backends.

pub mod backend;
pub mod error;
pub mod gpu;
