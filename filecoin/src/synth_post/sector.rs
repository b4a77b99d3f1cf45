//! One synthetic sector's PoSt vanilla proof: its comm_r_last tree is sparse (only the challenged
//! leaves are set, drawn from the sector's seed; every other node is its level's default), comm_c
//! is drawn from the same seed, and comm_r = H(comm_c, comm_r_last) as filecoin-proofs computes
//! it. The proof is filecoin-proofs' `FallbackPoStSectorProof`, with one inclusion proof per
//! challenge in the challenges' order, as `generate_single_vanilla_proof` returns it.

use std::collections::BTreeMap;

use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs::FallbackPoStSectorProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{Proof, SectorProof};

use crate::error::FilecoinError;
use crate::synth_c1::sparse::{Level, SparseTree};

/// The vanilla proof of sector `sector_id` for `challenges` (leaf indices, in order), over a tree
/// of `levels`, its values drawn from `seed`.
pub fn prove<Tree: 'static + MerkleTreeTrait>(
    sector_id: u64,
    challenges: &[u64],
    levels: &[Level],
    seed: [u8; 32],
) -> Result<FallbackPoStSectorProof<Tree>, FilecoinError> {
    type D<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;
    let mut rng = ChaCha20Rng::from_seed(seed);
    let comm_c = D::<Tree>::random(&mut rng);
    let mut leaves = BTreeMap::new();
    for &c in challenges {
        leaves
            .entry(c)
            .or_insert_with(|| D::<Tree>::random(&mut rng));
    }
    let tree = SparseTree::<Tree::Hasher>::new(levels.to_vec(), leaves, D::<Tree>::default())
        .map_err(|e| FilecoinError::invalid(format!("synthetic sector {sector_id}"), e))?;
    let comm_r_last = tree.root();
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let inclusion_proofs = challenges
        .iter()
        .map(|&c| {
            Ok(MerkleProof::from_parts(
                tree.leaf(c),
                comm_r_last,
                tree.path(c)?,
            ))
        })
        .collect::<Result<Vec<_>, FilecoinError>>()?;
    Ok(FallbackPoStSectorProof {
        sector_id: SectorId::from(sector_id),
        comm_r,
        vanilla_proof: Proof {
            sectors: vec![SectorProof {
                inclusion_proofs,
                comm_c,
                comm_r_last,
            }],
        },
    })
}
