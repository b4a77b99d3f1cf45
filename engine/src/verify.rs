//! Verification through bellperson's verifier (the reference a Groth16 proof must satisfy).

use bellperson::groth16::{prepare_verifying_key, verify_proof, PreparedVerifyingKey, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};

use crate::error::EngineError;

pub struct Verifier {
    pvk: PreparedVerifyingKey<Bls12>,
}

impl Verifier {
    pub fn new(vk: &VerifyingKey<Bls12>) -> Self {
        Verifier { pvk: prepare_verifying_key(vk) }
    }

    /// `public_inputs` excludes the constant `one`.
    pub fn verify(&self, proof: &Proof<Bls12>, public_inputs: &[Scalar]) -> Result<bool, EngineError> {
        verify_proof(&self.pvk, proof, public_inputs).map_err(|e| EngineError::Verify(e.to_string()))
    }
}
