//! Verification through bellperson's verifier (the reference a Groth16 proof must satisfy).

use bellperson::groth16::{
    prepare_verifying_key, verify_proof, PreparedVerifyingKey, Proof, VerifyingKey,
};
use blstrs::{Bls12, Scalar};

use crate::error::EngineError;

pub struct Verifier {
    pvk: PreparedVerifyingKey<Bls12>,
}

impl Verifier {
    pub fn new(vk: &VerifyingKey<Bls12>) -> Self {
        Verifier {
            pvk: prepare_verifying_key(vk),
        }
    }

    /// `public_inputs` excludes the constant `one`.
    pub fn verify(
        &self,
        proof: &Proof<Bls12>,
        public_inputs: &[Scalar],
    ) -> Result<bool, EngineError> {
        verify_proof(&self.pvk, proof, public_inputs)
            .map_err(|e| EngineError::Verify(e.to_string()))
    }
}

/// Synthesized public inputs (without `one`) against those a proof system computes for the
/// partition itself (filecoin-proofs' `generate_public_inputs`): the first difference is named.
/// A proof of other inputs would pass self-verification yet fail where the system verifies it.
pub fn check_public_inputs(
    partition: usize,
    got: &[Scalar],
    expected: &[Scalar],
) -> Result<(), EngineError> {
    if got.len() != expected.len() {
        return Err(EngineError::Other(format!(
            "partition {partition}: synthesis gave {} public inputs, the proof system expects {}",
            got.len(),
            expected.len()
        )));
    }
    match got.iter().zip(expected).position(|(g, e)| g != e) {
        Some(k) => Err(EngineError::Other(format!(
            "partition {partition}: public input {k} from synthesis differs from the expected one"
        ))),
        None => Ok(()),
    }
}
