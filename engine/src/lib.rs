//! cuzk-engine: circuit synthesis, Groth16 prover math, the `Backend` trait, CPU and CUDA backends.
