//! A PoRep partition recorded from its blank circuit, ahead of its first proof (and of its
//! parameters: the setup can run beside it), for the proving path's recording cache.

use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;

use super::witness::PoRepPartition;
use super::{blank_circuit, public_params};
use crate::error::FilecoinError;
use crate::shape::with_shape;

/// A PoRep partition's recording made from its blank circuit, before its parameters exist (the
/// setup can run beside it), under the key the proving path looks it up by.
pub struct BlankRecording {
    key: &'static str,
    rec: cuzk_engine::recorded::Recording,
}

/// Records `registered`'s partition circuit from its blank circuit (no values; one thread).
/// Constraint structure does not depend on the witness in a Filecoin circuit, so this is the
/// recording the first proof would make; a proof that drifted from it is still caught by the
/// recorded path's sampled rows, its periodic full synthesis and self-verification.
pub fn record_blank(registered: RegisteredSealProof) -> Result<BlankRecording, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        record_blank_shaped,
        registered
    )
}

fn record_blank_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
) -> Result<BlankRecording, FilecoinError> {
    let vp = public_params::<Tree>(&registered.as_v1_config())?.vanilla_params;
    let (rec, _) = cuzk_engine::recorded::record(blank_circuit::<Tree>(&vp), false, 0)?;
    Ok(BlankRecording {
        key: cuzk_engine::recorded::RecordingCache::key_of::<PoRepPartition<Tree>>(),
        rec,
    })
}

impl BlankRecording {
    /// The recording itself.
    pub fn recording(&self) -> &cuzk_engine::recorded::Recording {
        &self.rec
    }
    /// Holds the recording in the process-wide cache for proofs against `srs` (refused if it
    /// does not fit them).
    pub fn install(self, srs: &cuzk_srs::Srs) -> Result<(), FilecoinError> {
        let rec = self
            .rec
            .bind(self.key, cuzk_engine::recorded::ParamsBinding::of(srs));
        cuzk_engine::recorded::RecordingCache::global().insert(self.key, srs, rec)?;
        Ok(())
    }
}
