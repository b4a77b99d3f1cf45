//! The `Backend` trait: the heavy steps of a Groth16 proof, cut so that a CPU or a GPU can do them.
//!
//! The prover (`prover.rs`) owns the math around these steps — synthesis, density filtering, the
//! 0/1 split of scalars, assembly with `r, s` — and never changes with the backend below it.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use crate::error::EngineError;

/// A bitmap over base indices: bit `i` (word `i / 64`, bit `i % 64`, LSB first) selects `bases[i]`.
pub type Bitmap = [u64];

pub trait Backend: Send + Sync {
    /// A short name for logs and errors ("cpu", "cuda:0").
    fn name(&self) -> &str;

    /// The H polynomial's coefficients.
    ///
    /// `a`, `b`, `c` are the evaluations over the domain, each zero-padded to the domain size
    /// `n` (a power of two). Computes `iFFT → coset FFT (generator 7) → (a·b − c)/Z → coset iFFT`
    /// and returns the first `n − 1` coefficients. The inputs are consumed so their memory can be
    /// released as soon as H is done.
    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>)
        -> Result<Vec<Scalar>, EngineError>;

    /// `Σ scalars[i] · bases[i]` over G1; `bases.len() == scalars.len()`. Scalars may be zero.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError>;

    /// `Σ scalars[i] · bases[i]` over G2; `bases.len() == scalars.len()`. Scalars may be zero.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError>;

    /// `Σ bases[i]` for every `i` whose bit is set in `bits` (the scalars equal to one).
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError>;

    /// `Σ bases[i]` for every `i` whose bit is set in `bits`, over G2.
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError>;
}
