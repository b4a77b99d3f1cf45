//! Proving a request in-process on one backend, without the actor engine: what a program that
//! links cuzk-engine directly (or a test) does. The engine's job builder is the other sink.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_engine::{Pipeline, ProofBatch, Prover};
use cuzk_srs::Srs;

use crate::error::FilecoinError;
use crate::request::Parsed;
use crate::sink::{CircuitSink, Partitions};

/// Randomness for the partitions' proofs.
pub enum Rs<'a> {
    /// Drawn from the thread RNG.
    Random,
    /// `(r, s)` per partition.
    Fixed(&'a [(Scalar, Scalar)]),
}

/// Proves `parsed` against `srs` on `backend`: synthesis, the public inputs checked against
/// filecoin-proofs' own, proofs self-verified. The bytes are `ProofBatch::to_bytes`.
pub fn prove(
    parsed: Parsed,
    srs: &Srs,
    backend: &dyn Pipeline,
    rs: Rs<'_>,
) -> Result<ProofBatch, FilecoinError> {
    parsed.build(InProcess { srs, backend, rs })?
}

struct InProcess<'a> {
    srs: &'a Srs,
    backend: &'a dyn Pipeline,
    rs: Rs<'a>,
}

impl CircuitSink for InProcess<'_> {
    type Out = Result<ProofBatch, FilecoinError>;
    fn take<C: Circuit<Scalar> + Send + 'static>(self, parts: Partitions<C>) -> Self::Out {
        let n = parts.circuits.len();
        let (r, s): (Vec<Scalar>, Vec<Scalar>) = match self.rs {
            Rs::Fixed(rs) => rs.iter().copied().unzip(),
            Rs::Random => {
                let mut rng = rand::thread_rng();
                (0..n)
                    .map(|_| {
                        (
                            <Scalar as ff::Field>::random(&mut rng),
                            <Scalar as ff::Field>::random(&mut rng),
                        )
                    })
                    .unzip()
            }
        };
        let batch = Prover::new(self.srs, self.backend).prove(parts.circuits, &r, &s)?;
        check_inputs(&batch.public_inputs, &parts.public_inputs)?;
        Ok(batch)
    }
}

/// The public inputs synthesis produced, partition by partition, against those filecoin-proofs
/// computes.
pub fn check_inputs(got: &[Vec<Scalar>], expected: &[Vec<Scalar>]) -> Result<(), FilecoinError> {
    if got.len() != expected.len() {
        return Err(FilecoinError::invalid(
            "partitions",
            format!("{} proved, {} expected", got.len(), expected.len()),
        ));
    }
    for (k, (g, e)) in got.iter().zip(expected).enumerate() {
        cuzk_engine::verify::check_public_inputs(k, g, e)?;
    }
    Ok(())
}
