//! SnapDeals (empty sector update): from the vanilla partition proofs (bincode `PartitionProof`s,
//! as filecoin-proofs-api's `generate_partition_proofs` returns them) and the three commitments,
//! the partition circuits and public inputs of `EmptySectorUpdateCompound` ([`SnapDeals`], the
//! kind's [`Compound`]). Each vanilla proof is verified against the commitments before its circuit
//! is built (as PoSt's are), so a proof of another sector is an `Invalid` request, not a failed job.

use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::types::{MerkleTreeTrait, SectorUpdateConfig};
use filecoin_proofs::{DefaultPieceDomain, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof, PublicInputs, SetupParams};

use crate::compound::Compound;
use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::request::decode_bincode;
use crate::shape::with_shape;
use crate::sink::{BlankSink, CircuitSink, Partitions, Remake};
use crate::verify;

#[derive(Clone, Debug)]
pub struct SnapInput {
    pub registered: RegisteredUpdateProof,
    /// One bincode `PartitionProof` per partition, in order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
}

/// SnapDeals: an empty sector's update (`EmptySectorUpdateCompound`).
pub struct SnapDeals;

impl Compound for SnapDeals {
    const KIND: ProofKind = ProofKind::SnapDeals;
    type Proof = RegisteredUpdateProof;
    type Input = SnapInput;

    fn registered(input: &SnapInput) -> RegisteredUpdateProof {
        input.registered
    }

    fn build<S: CircuitSink>(input: SnapInput, sink: S) -> Result<S::Out, FilecoinError> {
        with_shape!(
            u64::from(input.registered.sector_size()),
            build_shaped<S>,
            input,
            sink
        )
    }

    fn blank<S: BlankSink>(
        registered: RegisteredUpdateProof,
        sink: S,
    ) -> Result<S::Out, FilecoinError> {
        with_shape!(
            u64::from(registered.sector_size()),
            blank_shaped<S>,
            registered,
            sink
        )
    }

    /// Every partition's, from the commitments (the vanilla proofs are private).
    fn public_inputs(input: &SnapInput) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
        with_shape!(
            u64::from(input.registered.sector_size()),
            public_inputs_shaped,
            input
        )
    }

    /// `verify_empty_sector_update_proof`.
    fn verify(input: &SnapInput, proof: &[u8]) -> Result<bool, FilecoinError> {
        verify::guarded(Registered::Update(input.registered), |ctx| {
            filecoin_proofs_api::update::verify_empty_sector_update_proof(
                input.registered,
                proof,
                input.comm_r_old,
                input.comm_r_new,
                input.comm_d_new,
            )
            .map_err(FilecoinError::proofs(ctx))
        })
    }
}

/// The compound proof's public parameters.
type UpdateParams<Tree> =
    compound_proof::PublicParams<'static, storage_proofs_update::EmptySectorUpdate<Tree>>;

/// The compound public parameters of `registered`, as filecoin-proofs sets them up for proving
/// and verifying, and its configuration.
fn public_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
) -> Result<(UpdateParams<Tree>, SectorUpdateConfig), FilecoinError> {
    let config = SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(usize::from(config.update_partitions)),
        priority: false,
    };
    let pp = EmptySectorUpdateCompound::<Tree>::setup(&setup)
        .map_err(FilecoinError::proofs("SnapDeals public parameters"))?;
    Ok((pp, config))
}

/// The compound public parameters and public inputs of a sector update, as filecoin-proofs
/// computes them for proving and verifying.
fn public<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
) -> Result<(UpdateParams<Tree>, PublicInputs), FilecoinError> {
    let (pp, config) = public_params::<Tree>(input.registered)?;
    let pub_in = PublicInputs {
        k: usize::from(config.update_partitions),
        comm_r_old: <TreeRHasher as Hasher>::Domain::try_from_bytes(&input.comm_r_old)
            .map_err(FilecoinError::proofs("comm_r_old"))?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&input.comm_d_new)
            .map_err(FilecoinError::proofs("comm_d_new"))?,
        comm_r_new: <TreeRHasher as Hasher>::Domain::try_from_bytes(&input.comm_r_new)
            .map_err(FilecoinError::proofs("comm_r_new"))?,
        h: config.h,
    };
    Ok((pp, pub_in))
}

fn build_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, S: CircuitSink>(
    input: SnapInput,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let (pp, pub_in) = public::<Tree>(&input)?;
    let SnapInput {
        registered,
        vanilla_proofs,
        ..
    } = input;
    let partitions = pub_in.k;
    if vanilla_proofs.len() != partitions {
        return Err(FilecoinError::invalid(
            "SnapDeals request",
            format!(
                "{} vanilla partition proofs; {registered:?} has {partitions} partitions",
                vanilla_proofs.len()
            ),
        ));
    }
    let mut circuits = Vec::with_capacity(partitions);
    let mut public_inputs = Vec::with_capacity(partitions);
    for (k, bytes) in vanilla_proofs.iter().enumerate() {
        let proof: PartitionProof<Tree> =
            decode_bincode(bytes, &format!("SnapDeals vanilla partition proof {k}"))?;
        let expected = pp.vanilla_params.challenge_count;
        if proof.challenge_proofs.len() != expected {
            return Err(FilecoinError::invalid(
                format!("SnapDeals vanilla partition proof {k}"),
                format!(
                    "{} challenge proofs, {expected} expected",
                    proof.challenge_proofs.len()
                ),
            ));
        }
        check_vanilla(&pp, &pub_in, k, &proof)?;
        circuits.push(
            EmptySectorUpdateCompound::<Tree>::circuit(
                &pub_in,
                (),
                &proof,
                &pp.vanilla_params,
                Some(k),
            )
            .map_err(FilecoinError::proofs(format!(
                "SnapDeals partition {k} circuit"
            )))?,
        );
        public_inputs.push(partition_inputs(&pp, &pub_in, k)?);
    }
    Ok(sink.take(Partitions {
        circuits,
        public_inputs,
        parallel_witness: None,
    }))
}

/// Whether vanilla partition proof `k` holds for the request's commitments, as filecoin-proofs'
/// `verify_partition_proofs` checks it: a proof of another sector or update is refused here, up
/// front, rather than reaching synthesis (whose gadgets may panic on it) or a proof that fails.
fn check_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &UpdateParams<Tree>,
    pub_in: &PublicInputs,
    k: usize,
    proof: &PartitionProof<Tree>,
) -> Result<(), FilecoinError> {
    use storage_proofs_core::proof::ProofScheme;
    let what = || format!("SnapDeals vanilla partition proof {k}");
    let partition = PublicInputs {
        k,
        ..pub_in.clone()
    };
    match storage_proofs_update::EmptySectorUpdate::<Tree>::verify(
        &pp.vanilla_params,
        &partition,
        proof,
    ) {
        Ok(true) => Ok(()),
        Ok(false) => Err(FilecoinError::invalid(
            what(),
            "filecoin-proofs' vanilla verifier refuses it for the request's comm_r_old, comm_r_new \
             and comm_d_new (a proof of another sector or update?)",
        )),
        Err(e) => Err(FilecoinError::invalid(
            what(),
            format!("filecoin-proofs' vanilla verifier refuses it: {e:#}"),
        )),
    }
}

/// Partition `k`'s public inputs (`EmptySectorUpdateCompound::generate_public_inputs`).
fn partition_inputs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &UpdateParams<Tree>,
    pub_in: &PublicInputs,
    k: usize,
) -> Result<Vec<Scalar>, FilecoinError> {
    EmptySectorUpdateCompound::<Tree>::generate_public_inputs(pub_in, &pp.vanilla_params, Some(k))
        .map_err(FilecoinError::proofs(format!(
            "SnapDeals partition {k} public inputs"
        )))
}

fn public_inputs_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
    let (pp, pub_in) = public::<Tree>(input)?;
    (0..pub_in.k)
        .map(|k| partition_inputs(&pp, &pub_in, k))
        .collect()
}

fn blank_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, S: BlankSink>(
    registered: RegisteredUpdateProof,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let (pp, _) = public_params::<Tree>(registered)?;
    let vp = pp.vanilla_params;
    Ok(sink.take(Remake(move || {
        EmptySectorUpdateCompound::<Tree>::blank_circuit(&vp)
    })))
}

/// The parameter cache identifier of `registered`'s circuit. (filecoin-proofs-api's
/// `RegisteredUpdateProof::cache_params_path` names the PoRep file of the same sector size; the
/// update circuit's own files are `v28-empty-sector-update-…`, as filecoin-proofs looks them up.)
pub fn cache_identifier(registered: RegisteredUpdateProof) -> Result<String, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        identifier_shaped,
        registered
    )
}

fn identifier_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
) -> Result<String, FilecoinError> {
    use storage_proofs_core::parameter_cache::CacheableParameters;
    let pp =
        storage_proofs_update::PublicParams::from_sector_size(u64::from(registered.sector_size()));
    Ok(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
        storage_proofs_update::EmptySectorUpdateCircuit<Tree>,
        _,
    >>::cache_identifier(&pp))
}
