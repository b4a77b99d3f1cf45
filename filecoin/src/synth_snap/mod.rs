//! The vanilla partition proofs of a SnapDeals update of a synthetic sector, at any sector size up
//! to 64 GiB, in seconds.
//!
//! The update circuit checks, per challenge, the old replica's leaf in comm_r_old's tree, the new
//! data's leaf in comm_d_new's tree (and the partition's apex leaves), the new replica's leaf in
//! comm_r_new's tree, the encoding `new = old + data · rho(high bits of the node)`, and
//! comm_r = H(comm_c, root) for both replicas. The challenges are drawn from comm_r_new, so the new
//! replica's tree must exist in full before them: here every tree is periodic
//! ([`periodic`]): the old replica and the new data repeat with a short period, so the new replica
//! repeats within each `rho` region, and every tree costs a few thousand hashes at any size while
//! every leaf holds real values. comm_c, the old replica's and the data's leaves are drawn from the
//! seed; `h` (the number of high bits) is filecoin-proofs' default for the size. The output is what
//! filecoin-proofs-api's `generate_partition_proofs` returns — one bincode `PartitionProof` per
//! partition — with the three commitments, and its proofs pass storage-proofs'
//! `EmptySectorUpdate::verify` ([`partition::verify_partitions`]) before it is returned.

pub mod partition;
pub mod periodic;

use std::time::{Duration, Instant};

use blstrs::Scalar as Fr;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs::TreeRHasher;
use filecoin_proofs_api::RegisteredUpdateProof;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use storage_proofs_update::{phi, rho};
use typenum::Unsigned;

use crate::error::FilecoinError;
use crate::registered::Registered;
use crate::request::ProofRequest;
use crate::shape::with_shape;
use crate::synth_c1::sparse;
use crate::synth_c1::writer::commitment;
use periodic::PeriodicTree;

/// Leaves in one period of the old replica and the new data (or a `rho` region, if smaller).
pub const PERIOD: u64 = 64;

/// A synthetic update's vanilla proofs and what went into them.
#[derive(Clone, Debug)]
pub struct SynthSnap {
    pub registered: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition, in order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub partitions: usize,
    /// Challenges over all partitions.
    pub challenges: usize,
    /// The number of high bits of a node index that select its `rho`.
    pub h: usize,
    pub elapsed: Duration,
}

impl SynthSnap {
    /// The SnapDeals request of these proofs.
    pub fn request(&self) -> ProofRequest {
        ProofRequest::SnapDeals {
            registered: Registered::Update(self.registered).abi(),
            vanilla_proofs: self.vanilla_proofs.clone(),
            comm_r_old: self.comm_r_old,
            comm_r_new: self.comm_r_new,
            comm_d_new: self.comm_d_new,
        }
    }
}

/// The update proof of a sector size written as [`crate::synth_c1::registered_for`] takes it.
pub fn registered_for(size: &str) -> Result<RegisteredUpdateProof, FilecoinError> {
    crate::sample::update_proof_of(crate::synth_c1::registered_for(size)?)
}

/// The synthetic update of `registered`, everything drawn from `seed`.
pub fn generate(registered: RegisteredUpdateProof, seed: u64) -> Result<SynthSnap, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        generate_shaped,
        registered,
        seed
    )
}

fn generate_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
    seed: u64,
) -> Result<SynthSnap, FilecoinError> {
    let start = Instant::now();
    // The parameters and filecoin-proofs' `h` for the size (the commitments come later).
    let (pp, config) = partition::public(registered, &[0; 32], &[0; 32], &[0; 32])?;
    let h = config.h;
    let nodes = pp.sector_nodes as u64;
    let region = nodes >> h;
    let period = PERIOD.min(region);

    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5359_4e54_4853_4e41);
    type RDomain = <TreeRHasher as Hasher>::Domain;
    type DDomain = <Sha256Hasher as Hasher>::Domain;
    let comm_c = RDomain::random(&mut rng);
    let old: Vec<RDomain> = (0..period).map(|_| RDomain::random(&mut rng)).collect();
    let data: Vec<DDomain> = (0..period).map(|_| DDomain::random(&mut rng)).collect();

    let r_levels = sparse::shape(
        nodes,
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    )?;
    let d_levels = sparse::shape(nodes, 2, 0, 0)?;
    let tree_d =
        PeriodicTree::<Sha256Hasher>::new(d_levels, period, nodes, |_, m| data[m as usize])?;
    let tree_r_old =
        PeriodicTree::<TreeRHasher>::new(r_levels.clone(), period, nodes, |_, m| old[m as usize])?;
    let comm_d_new = tree_d.root();
    let hash2 = <TreeRHasher as Hasher>::Function::hash2;
    let comm_r_old = hash2(&comm_c, &tree_r_old.root());

    // The new replica: old + data · rho(phi, g) in region g (the h high bits of the node index).
    let phi = phi(&comm_d_new, &comm_r_old);
    let rhos: Vec<Fr> = (0..nodes / region)
        .into_par_iter()
        .map(|g| rho(&phi, g as u32))
        .collect();
    let tree_r_new = PeriodicTree::<TreeRHasher>::new(r_levels, period, region, |g, m| {
        let (o, d): (Fr, Fr) = (old[m as usize].into(), data[m as usize].into());
        RDomain::from(o + d * rhos[g as usize])
    })?;
    let comm_r_new = hash2(&comm_c, &tree_r_new.root());

    let trees = partition::Trees {
        r_old: &tree_r_old,
        d_new: &tree_d,
        r_new: &tree_r_new,
        comm_c,
    };
    let proofs = (0..pp.partition_count)
        .into_par_iter()
        .map(|k| trees.partition::<Tree>(&pp, comm_r_new, k))
        .collect::<Result<Vec<_>, _>>()?;
    let (comm_r_old, comm_r_new, comm_d_new) = (
        commitment(comm_r_old),
        commitment(comm_r_new),
        commitment(comm_d_new),
    );
    let (pp, pub_in) = partition::public(registered, &comm_r_old, &comm_r_new, &comm_d_new)?;
    partition::verify_partitions(&pp, &pub_in, &proofs)?;
    let vanilla_proofs = proofs
        .par_iter()
        .enumerate()
        .map(|(k, p)| {
            bincode1::serialize(p).map_err(|e| {
                FilecoinError::invalid(format!("SnapDeals vanilla partition proof {k}"), e)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SynthSnap {
        registered,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs,
        partitions: pp.partition_count,
        challenges: proofs.iter().map(|p| p.challenge_proofs.len()).sum(),
        h,
        elapsed: start.elapsed(),
    })
}
