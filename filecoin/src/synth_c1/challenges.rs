//! Who seals what (prover id, sector number, ticket and interactive seed, drawn from one seed),
//! the replica id, the challenges of every partition and each challenged node's parents — all
//! with filecoin-proofs' own functions over the registered proof's real graph (its porep id and
//! api version).

use std::collections::{BTreeMap, BTreeSet};

use filecoin_hashers::sha256::Sha256Domain;
use filecoin_hashers::Hasher;
use filecoin_proofs::types::MerkleTreeTrait;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{self, Challenges, StackedBucketGraph};

use crate::error::FilecoinError;
use crate::sample::fr32_bytes;

/// The sector's identity and randomness.
#[derive(Clone, Copy, Debug)]
pub struct Identity {
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    /// The interactive randomness (C1's `seed`).
    pub seed: [u8; 32],
    /// What the sector's data is drawn from.
    pub data_seed: [u8; 32],
}

impl Identity {
    /// Everything drawn from `seed` (ChaCha20).
    pub fn from_seed(seed: u64) -> Identity {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5359_4e54_4831_4331);
        Identity {
            prover_id: fr32_bytes(&mut rng),
            sector_id: u64::from(rng.next_u32()),
            ticket: fr32_bytes(&mut rng),
            seed: fr32_bytes(&mut rng),
            data_seed: fr32_bytes(&mut rng),
        }
    }
}

/// `generate_replica_id` exactly as `seal_commit_phase1` calls it.
pub fn replica_id<Tree: MerkleTreeTrait>(
    id: &Identity,
    comm_d: Sha256Domain,
    porep_id: &[u8; 32],
) -> <Tree::Hasher as Hasher>::Domain {
    stacked::generate_replica_id::<Tree::Hasher, _>(
        &id.prover_id,
        id.sector_id,
        &id.ticket,
        comm_d,
        porep_id,
    )
}

/// The challenged nodes of each partition, as the prover and verifier derive them.
pub fn partition_challenges<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
    replica_id: <Tree::Hasher as Hasher>::Domain,
    seed: [u8; 32],
    partitions: usize,
) -> Result<Vec<Vec<usize>>, FilecoinError> {
    if !matches!(pp.challenges, Challenges::Interactive(_)) {
        return Err(FilecoinError::invalid(
            "synthetic C1",
            "only interactive PoRep (its challenges do not depend on comm_r); synthetic and \
             non-interactive PoRep draw theirs from comm_r",
        ));
    }
    let pub_in = stacked::PublicInputs::<_, Sha256Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    Ok((0..partitions)
        .map(|k| pub_in.challenges(&pp.challenges, pp.graph.size(), Some(k)))
        .collect())
}

/// Each challenged node's parents (base parents first, then expansion parents), from the graph.
pub fn parents<H: Hasher>(
    graph: &StackedBucketGraph<H>,
    challenged: &BTreeSet<u64>,
) -> Result<BTreeMap<u64, Vec<u32>>, FilecoinError> {
    let mut out = BTreeMap::new();
    for &c in challenged {
        let mut p = vec![0u32; graph.degree()];
        graph
            .parents(c as usize, &mut p)
            .map_err(|e| FilecoinError::invalid(format!("parents of node {c}"), e))?;
        out.insert(c, p);
    }
    Ok(out)
}
