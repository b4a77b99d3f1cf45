//! The vanilla partition proofs of the synthetic update, assembled into storage-proofs-update's
//! own types (`ChallengeProof`, `PartitionProof`) as `EmptySectorUpdate::prove_inner` makes them,
//! and storage-proofs' vanilla verification of any SnapDeals request's partition proofs with the
//! partition that fails named (as `verify_all_partitions` checks them, one partition at a time).

use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::types::{MerkleTreeTrait, SectorUpdateConfig};
use filecoin_proofs::{DefaultPieceDomain, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use rayon::prelude::*;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::ALLOWED_SECTOR_SIZES;
use storage_proofs_update::{
    ChallengeProof, Challenges, EmptySectorUpdate, PartitionProof, PublicInputs, PublicParams,
};

use super::periodic::PeriodicTree;
use crate::error::FilecoinError;
use crate::request::{catch, decode_bincode};
use crate::shape::with_shape;

type RDomain = <TreeRHasher as Hasher>::Domain;

/// The three trees of an update and the sector's comm_c.
pub struct Trees<'a> {
    pub r_old: &'a PeriodicTree<TreeRHasher>,
    pub d_new: &'a PeriodicTree<Sha256Hasher>,
    pub r_new: &'a PeriodicTree<TreeRHasher>,
    pub comm_c: RDomain,
}

/// A path in a replica's tree of shape `Tree`.
type RProof<Tree> = MerkleProof<
    TreeRHasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn r_proof<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    tree: &PeriodicTree<TreeRHasher>,
    c: u64,
) -> Result<RProof<Tree>, FilecoinError> {
    Ok(MerkleProof::from_parts(
        tree.leaf(c)?,
        tree.root(),
        tree.path(c)?,
    ))
}

impl Trees<'_> {
    /// Partition `k`'s proof: its challenges drawn from comm_r_new, their three paths, and the
    /// partition's apex leaves (the comm_d tree's row `apex_leaf_bit_len` levels below the
    /// partition's root).
    pub fn partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        &self,
        pp: &PublicParams,
        comm_r_new: RDomain,
        k: usize,
    ) -> Result<PartitionProof<Tree>, FilecoinError> {
        let apex_height = pp.challenge_bit_len - pp.partition_bit_len - pp.apex_leaf_bit_len;
        let first = (k * pp.apex_leaf_count) as u64;
        let apex_leafs = (first..first + pp.apex_leaf_count as u64)
            .map(|j| self.d_new.node(apex_height, j))
            .collect::<Result<Vec<_>, _>>()?;
        let challenge_proofs = Challenges::new(pp.sector_nodes, comm_r_new, k)
            .map(|c| {
                let c = u64::from(c);
                Ok(ChallengeProof {
                    proof_r_old: r_proof::<Tree>(self.r_old, c)?,
                    proof_d_new: MerkleProof::from_parts(
                        self.d_new.leaf(c)?,
                        self.d_new.root(),
                        self.d_new.path(c)?,
                    ),
                    proof_r_new: r_proof::<Tree>(self.r_new, c)?,
                })
            })
            .collect::<Result<Vec<_>, FilecoinError>>()?;
        Ok(PartitionProof {
            comm_c: self.comm_c,
            apex_leafs,
            challenge_proofs,
        })
    }
}

/// The update's public parameters and public inputs (partition 0), as filecoin-proofs sets them
/// up for `registered`.
pub fn public(
    registered: RegisteredUpdateProof,
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
) -> Result<(PublicParams, PublicInputs), FilecoinError> {
    let config = SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let sector_bytes = u64::from(config.sector_size);
    // `from_sector_size` panics on a size the update circuit does not know.
    if !ALLOWED_SECTOR_SIZES.contains(&(config.nodes_count)) {
        return Err(FilecoinError::SectorSize(sector_bytes));
    }
    let pp = PublicParams::from_sector_size(sector_bytes);
    let d = |b: &[u8; 32], what: &str| {
        FilecoinError::invalid(what, format!("{b:02x?}: not a field element"))
    };
    let pub_in = PublicInputs {
        k: 0,
        comm_r_old: RDomain::try_from_bytes(comm_r_old).map_err(|_| d(comm_r_old, "comm_r_old"))?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(comm_d_new)
            .map_err(|_| d(comm_d_new, "comm_d_new"))?,
        comm_r_new: RDomain::try_from_bytes(comm_r_new).map_err(|_| d(comm_r_new, "comm_r_new"))?,
        h: config.h,
    };
    Ok((pp, pub_in))
}

/// storage-proofs' `EmptySectorUpdate::verify` over every partition (in parallel), as
/// `verify_all_partitions` runs it; a partition that fails is named.
pub fn verify_partitions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    pub_in: &PublicInputs,
    proofs: &[PartitionProof<Tree>],
) -> Result<(), FilecoinError> {
    if proofs.len() != pp.partition_count {
        return Err(FilecoinError::invalid(
            "SnapDeals vanilla proofs",
            format!(
                "{} partition proofs; {} nodes take {}",
                proofs.len(),
                pp.sector_nodes,
                pp.partition_count
            ),
        ));
    }
    let failed: Vec<(usize, String)> = proofs
        .par_iter()
        .enumerate()
        .filter_map(|(k, proof)| {
            let what = format!("SnapDeals vanilla partition proof {k}");
            let partition = PublicInputs {
                k,
                ..pub_in.clone()
            };
            match catch(&what, || {
                EmptySectorUpdate::<Tree>::verify(pp, &partition, proof)
                    .map_err(FilecoinError::proofs(what.clone()))
            }) {
                Ok(true) => None,
                Ok(false) => Some((
                    k,
                    "storage-proofs' EmptySectorUpdate::verify refuses it for comm_r_old, \
                     comm_r_new and comm_d_new"
                        .to_string(),
                )),
                Err(e) => Some((k, e.to_string())),
            }
        })
        .collect();
    match failed.first() {
        None => Ok(()),
        Some((k, why)) => Err(FilecoinError::invalid(
            format!("SnapDeals vanilla partition proof {k}"),
            format!(
                "{why} (partitions failing: {:?})",
                failed.iter().map(|f| f.0).collect::<Vec<_>>()
            ),
        )),
    }
}

/// storage-proofs' vanilla verification of a SnapDeals request's partition proofs (bincode
/// `PartitionProof`s, as `generate_partition_proofs` writes them), synthetic or real; the
/// partition that fails is named.
pub fn verify_vanilla(
    registered: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: &[u8; 32],
    comm_r_new: &[u8; 32],
    comm_d_new: &[u8; 32],
) -> Result<(), FilecoinError> {
    let (pp, pub_in) = public(registered, comm_r_old, comm_r_new, comm_d_new)?;
    with_shape!(
        u64::from(registered.sector_size()),
        verify_bytes_shaped,
        &pp,
        &pub_in,
        vanilla_proofs
    )
}

fn verify_bytes_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    pub_in: &PublicInputs,
    vanilla_proofs: &[Vec<u8>],
) -> Result<(), FilecoinError> {
    let proofs: Vec<PartitionProof<Tree>> = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, b)| decode_bincode(b, &format!("SnapDeals vanilla partition proof {k}")))
        .collect::<Result<_, _>>()?;
    verify_partitions(pp, pub_in, &proofs)
}
