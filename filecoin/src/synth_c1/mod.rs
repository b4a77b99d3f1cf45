//! A PoRep C1 output of a sparse synthetic sector, at any sector size up to 64 GiB, in seconds.
//!
//! The PoRep circuit checks only the challenged nodes: the comm_d path of the data leaf, the
//! challenged node's labels recomputed from its parents', the column proofs of the node and its
//! parents in the comm_c tree, the encoding, the replica leaf in the comm_r_last tree, and
//! comm_r = H(comm_c, comm_r_last). A sector in which only those nodes and their paths exist is
//! enough: here every other node of the comm_c and comm_r_last trees is a default value (sparse
//! trees, [`sparse`]), and the data is periodic so that comm_d is known before the challenges
//! ([`data`]). The challenges, the parents ([`challenges`]) and the labels ([`labels`]) are
//! filecoin-proofs' own; the output ([`writer`]) is filecoin-proofs-api's
//! `SealCommitPhase1Output`, serde JSON as `seal_commit_phase1` writes it, and its vanilla
//! proofs pass storage-proofs' `verify_all_partitions` before it is returned.
//!
//! Interactive PoRep only (`StackedDrg…V1_1`): synthetic and non-interactive PoRep draw their
//! challenges from comm_r itself.

pub mod challenges;
pub mod data;
pub mod labels;
pub mod sparse;
pub mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{Column, StackedDrg};
use typenum::Unsigned;

use crate::error::FilecoinError;
use crate::request::ProofRequest;
use crate::shape::with_shape;
use challenges::Identity;

/// A synthetic C1 output and what went into it.
#[derive(Clone, Debug)]
pub struct SynthC1 {
    pub registered: RegisteredSealProof,
    pub identity: Identity,
    pub comm_d: [u8; 32],
    pub comm_r: [u8; 32],
    /// The `SealCommitPhase1Output` JSON.
    pub c1_json: Vec<u8>,
    pub partitions: usize,
    /// Challenges over all partitions (with repeats).
    pub challenges: usize,
    /// Distinct nodes opened in the comm_c tree (challenged nodes and their parents).
    pub opened: usize,
    pub elapsed: Duration,
}

impl SynthC1 {
    /// The PoRep C2 request of this output (with the prover id and sector number `verify_seal`
    /// needs).
    pub fn porep_request(&self) -> ProofRequest {
        ProofRequest::PoRep {
            c1_json: self.c1_json.clone(),
            prover_id: Some(self.identity.prover_id),
            sector_id: Some(self.identity.sector_id),
        }
    }
}

/// The interactive registered proof of a sector size written `2KiB`, `8MiB`, `512MiB`, `32GiB`
/// or `64GiB` (case-insensitive).
pub fn registered_for(size: &str) -> Result<RegisteredSealProof, FilecoinError> {
    use RegisteredSealProof::*;
    Ok(match size.to_ascii_lowercase().as_str() {
        "2kib" => StackedDrg2KiBV1_1,
        "8mib" => StackedDrg8MiBV1_1,
        "512mib" => StackedDrg512MiBV1_1,
        "32gib" => StackedDrg32GiBV1_1,
        "64gib" => StackedDrg64GiBV1_1,
        _ => {
            return Err(FilecoinError::invalid(
                "sector size",
                format!("{size:?}: one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"),
            ))
        }
    })
}

/// The synthetic C1 output of `registered` (an interactive PoRep), everything drawn from `seed`.
pub fn generate(registered: RegisteredSealProof, seed: u64) -> Result<SynthC1, FilecoinError> {
    let size = u64::from(registered.sector_size());
    with_shape!(size, generate_shaped, registered, seed)
}

fn generate_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
    seed: u64,
) -> Result<SynthC1, FilecoinError> {
    let start = Instant::now();
    let config = registered.as_v1_config();
    let size = u64::from(registered.sector_size());
    let nodes = size / 32;
    let pp = StackedDrg::<Tree, DefaultPieceHasher>::setup(
        &setup_params(&config).map_err(FilecoinError::proofs("PoRep setup parameters"))?,
    )
    .map_err(FilecoinError::proofs("PoRep public parameters"))?;
    let partitions = usize::from(config.partitions);
    let id = Identity::from_seed(seed);

    let data = data::DataTree::new(nodes, &id.data_seed)?;
    let comm_d = data.root();
    let replica_id = challenges::replica_id::<Tree>(&id, comm_d, &config.porep_id);
    let per_partition =
        challenges::partition_challenges::<Tree>(&pp, replica_id, id.seed, partitions)?;
    let challenged: BTreeSet<u64> = per_partition.iter().flatten().map(|&c| c as u64).collect();
    let parents = challenges::parents(&pp.graph, &challenged)?;

    let mut rng = ChaCha20Rng::from_seed(id.data_seed);
    let labels = labels::assign::<Tree::Hasher>(&replica_id, pp.num_layers, &parents, &mut rng)?;
    let mut c_leaves = BTreeMap::new();
    for (&node, rows) in &labels.columns {
        let col = Column::<Tree::Hasher>::new(node as u32, rows.clone())
            .map_err(|e| FilecoinError::invalid(format!("column of node {node}"), e))?;
        c_leaves.insert(node, <Tree::Hasher as Hasher>::Domain::from(col.hash()));
    }
    let mut r_leaves = BTreeMap::new();
    for &c in &challenged {
        let key = *labels.columns[&c]
            .last()
            .ok_or_else(|| FilecoinError::invalid("synthetic labels", "no layers"))?;
        r_leaves.insert(c, labels::encode(key, data.leaf(c)));
    }
    let levels = sparse::shape(
        nodes,
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    )?;
    let zero = <Tree::Hasher as Hasher>::Domain::default();
    let tree_c = sparse::SparseTree::<Tree::Hasher>::new(levels.clone(), c_leaves, zero)?;
    let tree_r = sparse::SparseTree::<Tree::Hasher>::new(levels, r_leaves, zero)?;

    let sector = writer::Sector::<Tree> {
        data: &data,
        tree_c: &tree_c,
        tree_r: &tree_r,
        labels: &labels,
        parents: &parents,
    };
    let proofs = per_partition
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|&c| sector.challenge_proof(c as u64))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let comm_r = sector.comm_r();
    writer::verify_partitions(&pp, replica_id, comm_d, comm_r, id.seed, &proofs)?;

    let c1 = SealCommitPhase1Output {
        registered_proof: registered,
        vanilla_proofs: writer::wrap::<Tree>(proofs, size)?,
        comm_r: writer::commitment(comm_r),
        comm_d: writer::commitment(comm_d),
        replica_id:
            <filecoin_proofs::constants::DefaultTreeHasher as Hasher>::Domain::try_from_bytes(
                replica_id.as_ref(),
            )
            .map_err(FilecoinError::proofs("replica_id"))?,
        seed: id.seed,
        ticket: id.ticket,
    };
    let c1_json = serde_json::to_vec(&c1).map_err(|e| FilecoinError::invalid("C1 output", e))?;
    Ok(SynthC1 {
        registered,
        identity: id,
        comm_d: c1.comm_d,
        comm_r: c1.comm_r,
        c1_json,
        partitions,
        challenges: per_partition.iter().map(Vec::len).sum(),
        opened: labels.columns.len(),
        elapsed: start.elapsed(),
    })
}
