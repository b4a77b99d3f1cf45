//! The vanilla proofs of the synthetic sector, assembled into filecoin-proofs' own types
//! (`stacked::Proof` per challenge, `SealCommitPhase1Output`), checked with storage-proofs'
//! `verify_all_partitions` as `seal_commit_phase1` checks its own.

use std::any::Any;
use std::collections::BTreeMap;

use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof as RawProof};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use storage_proofs_core::drgraph::BASE_DEGREE;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, StackedDrg,
};

use super::data::DataTree;
use super::labels::Labels;
use super::sparse::SparseTree;
use crate::error::FilecoinError;

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The three trees and the labels of the sector.
pub struct Sector<'a, Tree: MerkleTreeTrait> {
    pub data: &'a DataTree,
    pub tree_c: &'a SparseTree<Tree::Hasher>,
    pub tree_r: &'a SparseTree<Tree::Hasher>,
    pub labels: &'a Labels<Tree::Hasher>,
    pub parents: &'a BTreeMap<u64, Vec<u32>>,
}

fn tree_proof<Tree: MerkleTreeTrait>(
    tree: &SparseTree<Tree::Hasher>,
    node: u64,
) -> Result<TreeProof<Tree>, FilecoinError> {
    Ok(MerkleProof::from_parts(
        tree.leaf(node),
        tree.root(),
        tree.path(node)?,
    ))
}

impl<Tree: 'static + MerkleTreeTrait> Sector<'_, Tree> {
    fn column_proof(&self, node: u64) -> Result<ColumnProof<TreeProof<Tree>>, FilecoinError> {
        let rows = self.labels.columns.get(&node).ok_or_else(|| {
            FilecoinError::invalid("synthetic C1", format!("no column for node {node}"))
        })?;
        Ok(ColumnProof::new(
            node as u32,
            rows.clone(),
            tree_proof::<Tree>(self.tree_c, node)?,
        ))
    }

    /// The vanilla proof of challenge `c`, as `StackedDrg::prove_layers` makes it.
    pub fn challenge_proof(&self, c: u64) -> Result<RawProof<Tree>, FilecoinError> {
        let missing = |what: &str| {
            FilecoinError::invalid("synthetic C1", format!("no {what} for challenge {c}"))
        };
        let parents = self.parents.get(&c).ok_or_else(|| missing("parents"))?;
        let comm_d_proofs: MerkleProof<Sha256Hasher, typenum::U2> =
            MerkleProof::from_parts(self.data.leaf(c), self.data.root(), self.data.path(c)?);
        let drg_parents = parents[..BASE_DEGREE]
            .iter()
            .map(|&p| self.column_proof(u64::from(p)))
            .collect::<Result<Vec<_>, _>>()?;
        let exp_parents = parents[BASE_DEGREE..]
            .iter()
            .map(|&p| self.column_proof(u64::from(p)))
            .collect::<Result<Vec<_>, _>>()?;
        let per_layer = self
            .labels
            .labeling
            .get(&c)
            .ok_or_else(|| missing("labels"))?;
        let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> = per_layer
            .iter()
            .enumerate()
            .map(|(i, ps)| LabelingProof::new(i as u32 + 1, c, ps.clone()))
            .collect();
        let last = per_layer.len() as u32;
        let encoding_proof =
            EncodingProof::new(last, c, per_layer.last().cloned().unwrap_or_default());
        Ok(stacked::Proof {
            comm_d_proofs,
            comm_r_last_proof: tree_proof::<Tree>(self.tree_r, c)?,
            replica_column_proofs: ReplicaColumnProof {
                c_x: self.column_proof(c)?,
                drg_parents,
                exp_parents,
            },
            labeling_proofs,
            encoding_proof,
        })
    }

    /// comm_r = Poseidon(comm_c, comm_r_last), as filecoin-proofs computes it.
    pub fn comm_r(&self) -> <Tree::Hasher as Hasher>::Domain {
        <Tree::Hasher as Hasher>::Function::hash2(&self.tree_c.root(), &self.tree_r.root())
    }
}

/// Checks the partitions' vanilla proofs as `seal_commit_phase1` does before it returns them.
pub fn verify_partitions<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
    replica_id: <Tree::Hasher as Hasher>::Domain,
    comm_d: Sha256Domain,
    comm_r: <Tree::Hasher as Hasher>::Domain,
    seed: [u8; 32],
    proofs: &[Vec<RawProof<Tree>>],
) -> Result<(), FilecoinError> {
    let pub_in = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(seed),
    };
    let ok = StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(pp, &pub_in, proofs).map_err(
        FilecoinError::proofs("verify_all_partitions of the synthetic C1"),
    )?;
    if !ok {
        return Err(FilecoinError::invalid(
            "synthetic C1",
            "storage-proofs' verify_all_partitions rejects its vanilla proofs",
        ));
    }
    Ok(())
}

/// The vanilla proofs as the api's enum, by sector size.
pub fn wrap<Tree: 'static + MerkleTreeTrait>(
    proofs: Vec<Vec<RawProof<Tree>>>,
    size: u64,
) -> Result<VanillaSealProof, FilecoinError> {
    use filecoin_proofs::constants as c;
    let any: Box<dyn Any> = Box::new(proofs);
    let bad = || FilecoinError::invalid("synthetic C1", "vanilla proofs of another tree shape");
    Ok(match size {
        c::SECTOR_SIZE_2_KIB => {
            VanillaSealProof::StackedDrg2KiBV1(*any.downcast().map_err(|_| bad())?)
        }
        c::SECTOR_SIZE_8_MIB => {
            VanillaSealProof::StackedDrg8MiBV1(*any.downcast().map_err(|_| bad())?)
        }
        c::SECTOR_SIZE_512_MIB => {
            VanillaSealProof::StackedDrg512MiBV1(*any.downcast().map_err(|_| bad())?)
        }
        c::SECTOR_SIZE_32_GIB => {
            VanillaSealProof::StackedDrg32GiBV1(*any.downcast().map_err(|_| bad())?)
        }
        c::SECTOR_SIZE_64_GIB => {
            VanillaSealProof::StackedDrg64GiBV1(*any.downcast().map_err(|_| bad())?)
        }
        other => return Err(FilecoinError::SectorSize(other)),
    })
}

/// A commitment's 32 bytes.
pub fn commitment<D: Domain>(d: D) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// The api's vanilla proofs as the tree type `Tree`.
fn unwrap<Tree: 'static + MerkleTreeTrait>(
    v: &VanillaSealProof,
) -> Result<&Vec<Vec<RawProof<Tree>>>, FilecoinError> {
    let any: &dyn Any = match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => p,
        VanillaSealProof::StackedDrg8MiBV1(p) => p,
        VanillaSealProof::StackedDrg512MiBV1(p) => p,
        VanillaSealProof::StackedDrg32GiBV1(p) => p,
        VanillaSealProof::StackedDrg64GiBV1(p) => p,
    };
    any.downcast_ref().ok_or_else(|| {
        FilecoinError::invalid(
            "C1 output",
            "vanilla proofs of another sector size than its registered proof",
        )
    })
}

/// storage-proofs' `verify_all_partitions` over any (interactive PoRep) C1 output, synthetic or
/// sealed: what `seal_commit_phase1` checks before it returns one.
pub fn verify_c1(c1: &SealCommitPhase1Output) -> Result<(), FilecoinError> {
    let size = u64::from(c1.registered_proof.sector_size());
    crate::shape::with_shape!(size, verify_c1_shaped, c1)
}

fn verify_c1_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
) -> Result<(), FilecoinError> {
    let config = c1.registered_proof.as_v1_config();
    let pp = StackedDrg::<Tree, Sha256Hasher>::setup(
        &filecoin_proofs::parameters::setup_params(&config)
            .map_err(FilecoinError::proofs("PoRep setup parameters"))?,
    )
    .map_err(FilecoinError::proofs("PoRep public parameters"))?;
    let proofs = unwrap::<Tree>(&c1.vanilla_proofs)?;
    let d = |b: &[u8], what: &str| FilecoinError::invalid("C1 output", format!("{what}: {b:?}"));
    let replica_id = <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.replica_id.into_bytes())
        .map_err(|_| d(&c1.replica_id.into_bytes(), "replica_id"))?;
    let comm_r = <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_r)
        .map_err(|_| d(&c1.comm_r, "comm_r"))?;
    let comm_d = Sha256Domain::try_from_bytes(&c1.comm_d).map_err(|_| d(&c1.comm_d, "comm_d"))?;
    verify_partitions(&pp, replica_id, comm_d, comm_r, c1.seed, proofs)
}
