//! storage-proofs' vanilla verification of a PoSt partition's sector proofs, synthetic or real, as
//! filecoin-proofs runs it before proving (`single_partition_vanilla_proofs`, whose
//! `FallbackPoSt::verify` checks every sector of the partition) — with the sectors that fail
//! named, which storage-proofs only logs: when the partition fails, each sector is checked again
//! alone by the same `FallbackPoSt::verify`, as a partition of one sector at its own index.

use filecoin_hashers::Hasher;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs::{
    as_safe_commitment, parameters, single_partition_vanilla_proofs, FallbackPoStSectorProof,
    PoStType,
};
use filecoin_proofs_api::RegisteredPoStProof;
use rayon::prelude::*;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{self, FallbackPoSt, PublicSector};

use crate::error::FilecoinError;
use crate::request::{catch, decode_bincode};
use crate::shape::with_shape;

fn name(registered: RegisteredPoStProof) -> &'static str {
    match registered.typ() {
        filecoin_proofs_api::PoStType::Window => "WindowPoSt",
        filecoin_proofs_api::PoStType::Winning => "WinningPoSt",
    }
}

/// Whether a PoSt request's sector proofs (bincode `FallbackPoStSectorProof`s, one per sector in
/// sector order) hold for its randomness, prover id and partition; an error names the sectors
/// (their index in the request and their number) that do not.
pub fn verify_vanilla(
    registered: RegisteredPoStProof,
    vanilla_proofs: &[Vec<u8>],
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    partition_index: usize,
) -> Result<(), FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        verify_bytes_shaped,
        registered,
        vanilla_proofs,
        randomness,
        prover_id,
        partition_index
    )
}

fn verify_bytes_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    vanilla_proofs: &[Vec<u8>],
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    partition_index: usize,
) -> Result<(), FilecoinError> {
    let proofs: Vec<FallbackPoStSectorProof<Tree>> = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| decode_bincode(b, &format!("{} vanilla proof {i}", name(registered))))
        .collect::<Result<_, _>>()?;
    verify_proofs(registered, &proofs, randomness, prover_id, partition_index)
}

/// [`verify_vanilla`] over decoded proofs.
pub fn verify_proofs<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    proofs: &[FallbackPoStSectorProof<Tree>],
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    partition_index: usize,
) -> Result<(), FilecoinError> {
    let name = name(registered);
    let config = registered.as_v1_config();
    let setup = match config.typ {
        PoStType::Window => parameters::window_post_setup_params(&config),
        PoStType::Winning => parameters::winning_post_setup_params(&config)
            .map_err(FilecoinError::proofs("WinningPoSt setup parameters"))?,
    };
    let vp = FallbackPoSt::<Tree>::setup(&setup)
        .map_err(FilecoinError::proofs(format!("{name} public parameters")))?;
    if proofs.is_empty() {
        return Err(FilecoinError::invalid(
            format!("{name} vanilla proofs"),
            "no sector proofs",
        ));
    }
    type D<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;
    let randomness: D<Tree> = as_safe_commitment(randomness, "randomness")
        .map_err(FilecoinError::proofs("randomness"))?;
    let prover_id: D<Tree> =
        as_safe_commitment(prover_id, "prover_id").map_err(FilecoinError::proofs("prover_id"))?;
    let sectors: Vec<PublicSector<D<Tree>>> = proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let pub_in = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k: Some(partition_index),
    };
    let ctx = format!("{name} partition {partition_index}: filecoin-proofs' vanilla verification");
    let whole = catch(&ctx, || {
        single_partition_vanilla_proofs(&config, &vp, &pub_in, proofs)
            .map(|_| ())
            .map_err(FilecoinError::proofs(ctx.clone()))
    });
    let Err(whole) = whole else {
        return Ok(());
    };
    // Which sectors: WinningPoSt has one; a WindowPoSt sector is checked as the only sector of a
    // partition of one at its index in the deadline (the index its challenges are drawn for).
    let failed: Vec<usize> = match config.typ {
        PoStType::Winning => vec![0],
        PoStType::Window => {
            let one = fallback::PublicParams {
                sector_count: 1,
                ..vp.clone()
            };
            proofs
                .par_iter()
                .enumerate()
                .filter(|(i, p)| {
                    let alone = fallback::PublicInputs {
                        randomness,
                        prover_id,
                        sectors: vec![sectors[*i].clone()],
                        k: Some(partition_index * vp.sector_count + i),
                    };
                    let proof = fallback::Proof {
                        sectors: p.vanilla_proof.sectors.clone(),
                    };
                    !matches!(
                        catch(&ctx, || FallbackPoSt::<Tree>::verify(&one, &alone, &proof)
                            .map_err(FilecoinError::proofs(ctx.clone()))),
                        Ok(true)
                    )
                })
                .map(|(i, _)| i)
                .collect()
        }
    };
    match failed.first() {
        None => Err(whole),
        Some(&i) => Err(FilecoinError::invalid(
            format!(
                "{name} partition {partition_index} vanilla proof {i} (sector {})",
                u64::from(proofs[i].sector_id)
            ),
            format!(
                "storage-proofs' FallbackPoSt::verify refuses it ({} of {} sectors fail: {}): {whole}",
                failed.len(),
                proofs.len(),
                failed
                    .iter()
                    .take(8)
                    .map(|&j| u64::from(proofs[j].sector_id).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}
