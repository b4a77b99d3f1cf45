//! filecoin-proofs' own verifiers over cuzk's proof bytes: `verify_seal`,
//! `verify_empty_sector_update_proof`, `verify_window_post`, `verify_winning_post`.
//!
//! They read the verifying key from the `.vk` file in filecoin-proofs' parameter cache
//! (`FIL_PROOFS_PARAMETER_CACHE`, read once per process). Finding none, filecoin-proofs would
//! run a parameter setup of its own, so a missing `.vk` is an error here instead.

use std::collections::BTreeMap;

use filecoin_hashers::Domain;
use filecoin_proofs::FallbackPoStSectorProof;
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};

use crate::error::FilecoinError;
use crate::post::PoStInput;
use crate::registered::Registered;
use crate::request::{catch, decode_bincode, Parsed};

/// Whether filecoin-proofs accepts `proof` for the request `parsed`.
pub fn verify(parsed: &Parsed, proof: &[u8]) -> Result<bool, FilecoinError> {
    let registered = parsed.registered();
    let (dir, file) = (
        storage_proofs_core::parameter_cache::parameter_cache_dir(),
        registered.vk_file_name()?,
    );
    if !dir.join(&file).is_file() {
        return Err(FilecoinError::MissingParams {
            proof: format!("{registered} (verifying key)"),
            file,
            dir,
        });
    }
    let ctx = format!("filecoin-proofs verifying a {registered} proof");
    catch(&ctx, || {
        let r = match parsed {
            Parsed::PoRep(p) => {
                if p.c1
                    .registered_proof
                    .feature_enabled(filecoin_proofs_api::ApiFeature::NonInteractivePoRep)
                {
                    return Err(FilecoinError::invalid(
                        "NI-PoRep verification",
                        "filecoin-proofs verifies only the aggregate of NI-PoRep partition proofs (aggregation is not cuzk's); each partition was self-verified against generate_public_inputs",
                    ));
                }
                let (Some(prover_id), Some(sector_id)) = (p.prover_id, p.sector_id) else {
                    return Err(FilecoinError::invalid(
                        "PoRep verification",
                        "verify_seal needs the prover id and the sector number",
                    ));
                };
                let c1 = &p.c1;
                filecoin_proofs_api::seal::verify_seal(
                    c1.registered_proof,
                    c1.comm_r,
                    c1.comm_d,
                    prover_id,
                    SectorId::from(sector_id),
                    c1.ticket,
                    c1.seed,
                    proof,
                )
            }
            Parsed::Snap(s) => filecoin_proofs_api::update::verify_empty_sector_update_proof(
                s.registered,
                proof,
                s.comm_r_old,
                s.comm_r_new,
                s.comm_d_new,
            ),
            Parsed::PoSt(p) => return verify_post(p, proof),
        };
        r.map_err(FilecoinError::proofs(ctx.clone()))
    })
}

/// The sectors (id → public replica) of a PoSt request, from its vanilla proofs.
fn replicas(p: &PoStInput) -> Result<BTreeMap<SectorId, PublicReplicaInfo>, FilecoinError> {
    crate::shape::with_shape!(u64::from(p.registered.sector_size()), replicas_shaped, p)
}

fn replicas_shaped<Tree: 'static + filecoin_proofs::types::MerkleTreeTrait>(
    p: &PoStInput,
) -> Result<BTreeMap<SectorId, PublicReplicaInfo>, FilecoinError> {
    let mut out = BTreeMap::new();
    for (i, b) in p.vanilla_proofs.iter().enumerate() {
        let v: FallbackPoStSectorProof<Tree> =
            decode_bincode(b, &format!("PoSt vanilla proof {i}"))?;
        let mut comm_r = [0u8; 32];
        comm_r.copy_from_slice(&v.comm_r.into_bytes());
        out.insert(v.sector_id, PublicReplicaInfo::new(p.registered, comm_r));
    }
    Ok(out)
}

fn verify_post(p: &PoStInput, proof: &[u8]) -> Result<bool, FilecoinError> {
    let replicas = replicas(p)?;
    let ctx = format!(
        "filecoin-proofs verifying a {} proof",
        Registered::PoSt(p.registered)
    );
    match p.registered.typ() {
        filecoin_proofs_api::PoStType::Winning => filecoin_proofs_api::post::verify_winning_post(&p.randomness, proof, &replicas, p.prover_id),
        filecoin_proofs_api::PoStType::Window => {
            // verify_window_post checks a whole deadline's proof; one partition is that proof
            // only when it is partition 0 and holds every sector.
            if p.partition_index != 0 {
                return Err(FilecoinError::invalid(
                    "WindowPoSt verification",
                    format!("partition {}: verify_window_post takes whole proofs (partition 0 alone, or all partitions merged)", p.partition_index),
                ));
            }
            filecoin_proofs_api::post::verify_window_post(&p.randomness, &[(p.registered, proof)], &replicas, p.prover_id)
        }
    }
    .map_err(FilecoinError::proofs(ctx))
}
