//! PoRep C2: from a `SealCommitPhase1Output` (the JSON a node's C1 step writes) to the partition
//! circuits and public inputs, exactly as filecoin-proofs' `seal_commit_phase2` builds them
//! ([`PoRep`], the kind's [`Compound`]).
//!
//! The partition circuit proved is cuzk's cut of filecoin-proofs' (`circuit.rs`, its SHA-256
//! `sha256_lean/`), its witness synthesized a challenge per thread (`witness.rs`); `recording.rs`
//! records it from the blank circuit ahead of the first proof. [`PoRepInput::build_reference`]
//! hands over filecoin-proofs' own circuits instead, what cuzk's cut is checked and measured
//! against.

pub mod circuit;
mod recording;
pub mod sha256_lean;
pub mod witness;

use std::any::Any;

use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig, VanillaSealProof as RawProof};
use filecoin_proofs::{as_safe_commitment, parameters::setup_params, DefaultPieceDomain};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use crate::compound::Compound;
use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::shape::with_shape;
use crate::sink::{BlankSink, CircuitSink, Partitions, Remake};
use crate::verify;

use circuit::{ChallengeInputs, Glue};
pub use recording::{record_blank, BlankRecording};
use witness::{parallel_witness, PoRepPartition};

/// A PoRep C2 request.
#[derive(Clone, Debug)]
pub struct PoRepInput {
    pub c1: SealCommitPhase1Output,
    /// Needed only by filecoin-proofs' `verify_seal` (the replica id in the C1 output already
    /// binds them): the miner's prover id and the sector number.
    pub prover_id: Option<[u8; 32]>,
    pub sector_id: Option<u64>,
}

impl PoRepInput {
    /// Parses the C1 output as filecoin-proofs-api serialises it (serde JSON).
    pub fn from_json(bytes: &[u8]) -> Result<PoRepInput, FilecoinError> {
        let c1: SealCommitPhase1Output = serde_json::from_slice(bytes)
            .map_err(|e| FilecoinError::malformed("C1 output (SealCommitPhase1Output JSON)", e))?;
        Ok(PoRepInput {
            c1,
            prover_id: None,
            sector_id: None,
        })
    }

    /// Hands filecoin-proofs' own partition circuits (`StackedCompound::circuit`, its SHA-256
    /// gadget) to `sink`: the generic path the proving circuits are checked and measured against.
    pub fn build_reference<S: CircuitSink>(self, sink: S) -> Result<S::Out, FilecoinError> {
        let size = u64::from(self.c1.registered_proof.sector_size());
        with_shape!(size, build_shaped<S>, self.c1, sink, Cut::FilecoinProofs)
    }
}

/// The vanilla proofs of the C1 output as the tree type `Tree`, refusing a variant of another
/// sector size than the registered proof's.
fn vanilla<Tree: 'static + MerkleTreeTrait>(
    v: &VanillaSealProof,
    size: u64,
) -> Result<&Vec<Vec<RawProof<Tree>>>, FilecoinError> {
    use filecoin_proofs::constants as c;
    let (raw, of): (&dyn Any, u64) = match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => (p, c::SECTOR_SIZE_2_KIB),
        VanillaSealProof::StackedDrg8MiBV1(p) => (p, c::SECTOR_SIZE_8_MIB),
        VanillaSealProof::StackedDrg512MiBV1(p) => (p, c::SECTOR_SIZE_512_MIB),
        VanillaSealProof::StackedDrg32GiBV1(p) => (p, c::SECTOR_SIZE_32_GIB),
        VanillaSealProof::StackedDrg64GiBV1(p) => (p, c::SECTOR_SIZE_64_GIB),
    };
    if of != size {
        return Err(FilecoinError::invalid("C1 output", format!("its vanilla proofs are for {of}-byte sectors, its registered proof for {size}-byte sectors")));
    }
    raw.downcast_ref::<Vec<Vec<RawProof<Tree>>>>()
        .ok_or_else(|| FilecoinError::invalid("C1 output", "vanilla proofs of another tree shape"))
}

/// The compound proof's public parameters of `config`, as `seal_commit_phase2` sets them up.
fn public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<
    compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>,
    FilecoinError,
> {
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config)
            .map_err(FilecoinError::proofs("PoRep setup parameters"))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(FilecoinError::proofs("PoRep public parameters"))
}

/// PoRep C2, interactive, synthetic or non-interactive (one partition circuit, `StackedCompound`'s;
/// NI-PoRep has more partitions).
pub struct PoRep;

impl Compound for PoRep {
    const KIND: ProofKind = ProofKind::PoRep;
    type Proof = RegisteredSealProof;
    type Input = PoRepInput;

    fn registered(input: &PoRepInput) -> RegisteredSealProof {
        input.c1.registered_proof
    }

    /// cuzk's cut of the partition circuits (`circuit.rs`), with their parallel witness;
    /// [`PoRepInput::build_reference`] gives filecoin-proofs' own.
    fn build<S: CircuitSink>(input: PoRepInput, sink: S) -> Result<S::Out, FilecoinError> {
        let size = u64::from(input.c1.registered_proof.sector_size());
        with_shape!(size, build_shaped<S>, input.c1, sink, Cut::Ours)
    }

    fn blank<S: BlankSink>(
        registered: RegisteredSealProof,
        sink: S,
    ) -> Result<S::Out, FilecoinError> {
        with_shape!(
            u64::from(registered.sector_size()),
            blank_shaped<S>,
            registered,
            sink
        )
    }

    fn public_inputs(input: &PoRepInput) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
        let size = u64::from(input.c1.registered_proof.sector_size());
        with_shape!(size, public_inputs_shaped, &input.c1)
    }

    /// `verify_seal`, which needs the prover id and sector number as well. NI-PoRep partition
    /// proofs are refused: filecoin-proofs verifies only their aggregate.
    fn verify(input: &PoRepInput, proof: &[u8]) -> Result<bool, FilecoinError> {
        let c1 = &input.c1;
        verify::guarded(Registered::Seal(c1.registered_proof), |ctx| {
            if c1
                .registered_proof
                .feature_enabled(filecoin_proofs_api::ApiFeature::NonInteractivePoRep)
            {
                return Err(FilecoinError::invalid(
                    "NI-PoRep verification",
                    "filecoin-proofs verifies only the aggregate of NI-PoRep partition proofs (aggregation is not cuzk's); each partition was self-verified against generate_public_inputs",
                ));
            }
            let (Some(prover_id), Some(sector_id)) = (input.prover_id, input.sector_id) else {
                return Err(FilecoinError::invalid(
                    "PoRep verification",
                    "verify_seal needs the prover id and the sector number",
                ));
            };
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
            .map_err(FilecoinError::proofs(ctx))
        })
    }
}

/// Whose partition circuit `build_shaped` makes.
#[derive(Clone, Copy)]
enum Cut {
    /// `circuit.rs`, challenges synthesized in parallel (what is proved).
    Ours,
    /// filecoin-proofs' `StackedCircuit`.
    FilecoinProofs,
}

/// Refuses a C1 output whose comm_d, comm_r or seed is all zero.
fn check_commitments(c1: &SealCommitPhase1Output) -> Result<(), FilecoinError> {
    let what = "C1 output";
    if c1.comm_d == [0; 32] || c1.comm_r == [0; 32] {
        return Err(FilecoinError::invalid(what, "an all-zero comm_d or comm_r"));
    }
    if c1.seed == [0; 32] {
        return Err(FilecoinError::invalid(what, "an all-zero challenge seed"));
    }
    Ok(())
}

/// The public side of a C1 output: its commitments and replica id as domain elements, the
/// stacked proof's public inputs and the compound proof's public parameters.
struct Public<Tree: 'static + MerkleTreeTrait> {
    replica_id: <Tree::Hasher as Hasher>::Domain,
    comm_d: DefaultPieceDomain,
    comm_r: <Tree::Hasher as Hasher>::Domain,
    pub_in: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    pp: compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>,
}

impl<Tree: 'static + MerkleTreeTrait> Public<Tree> {
    fn of(c1: &SealCommitPhase1Output, config: &PoRepConfig) -> Result<Self, FilecoinError> {
        let comm_r =
            as_safe_commitment(&c1.comm_r, "comm_r").map_err(FilecoinError::proofs("comm_r"))?;
        let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
            .map_err(FilecoinError::proofs("comm_d"))?;
        // The replica id as a tree-hasher domain element of `Tree` (the same Poseidon domain).
        let replica_id =
            <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.replica_id.into_bytes())
                .map_err(FilecoinError::proofs("replica_id"))?;
        let pub_in = stacked::PublicInputs {
            replica_id,
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(c1.seed),
        };
        Ok(Public {
            replica_id,
            comm_d,
            comm_r,
            pub_in,
            pp: public_params::<Tree>(config)?,
        })
    }

    /// Partition `k`'s public inputs (`StackedCompound::generate_public_inputs`).
    fn partition(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
            &self.pub_in,
            &self.pp.vanilla_params,
            Some(k),
        )
        .map_err(FilecoinError::proofs(format!(
            "PoRep partition {k} public inputs"
        )))
    }
}

fn public_inputs_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
    check_commitments(c1)?;
    let config = c1.registered_proof.as_v1_config();
    let public = Public::<Tree>::of(c1, &config)?;
    (0..usize::from(config.partitions))
        .map(|k| public.partition(k))
        .collect()
}

fn build_shaped<Tree: 'static + MerkleTreeTrait, S: CircuitSink>(
    c1: SealCommitPhase1Output,
    sink: S,
    cut: Cut,
) -> Result<S::Out, FilecoinError> {
    let registered = c1.registered_proof;
    let config = registered.as_v1_config();
    let size = u64::from(registered.sector_size());
    let what = "C1 output";
    check_commitments(&c1)?;
    let vanilla_proofs = vanilla::<Tree>(&c1.vanilla_proofs, size)?;
    let partitions = usize::from(config.partitions);
    if vanilla_proofs.len() != partitions || vanilla_proofs.iter().any(|p| p.is_empty()) {
        return Err(FilecoinError::invalid(
            what,
            format!(
                "{} partitions of vanilla proofs (some empty: {}); {registered:?} has {partitions}",
                vanilla_proofs.len(),
                vanilla_proofs.iter().any(|p| p.is_empty())
            ),
        ));
    }
    let public = Public::<Tree>::of(&c1, &config)?;
    let pp = &public.pp;
    let per_partition = pp.vanilla_params.challenges.num_challenges_per_partition();
    // One of these is filled, by `cut`.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut public_inputs = Vec::with_capacity(partitions);
    for (k, proofs) in vanilla_proofs.iter().enumerate() {
        if proofs.len() != per_partition {
            return Err(FilecoinError::invalid(
                what,
                format!(
                    "partition {k} has {} challenge proofs; {registered:?} takes {per_partition}",
                    proofs.len()
                ),
            ));
        }
        // What StackedCompound::circuit puts in its StackedCircuit, kept in parts.
        let (comm_r_last, comm_c) = (proofs[0].comm_r_last(), proofs[0].comm_c());
        if proofs
            .iter()
            .any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c)
        {
            return Err(FilecoinError::invalid(
                what,
                format!("partition {k}: its challenge proofs disagree on comm_r_last or comm_c"),
            ));
        }
        match cut {
            Cut::Ours => {
                let challenges = (proofs.iter().enumerate())
                    .map(|(i, p)| {
                        ChallengeInputs::of::<Tree>(p).map_err(|e| {
                            FilecoinError::invalid(
                                what,
                                format!("partition {k}, challenge {i}: {e}"),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let glue = Glue {
                    replica_id: public.replica_id.into(),
                    comm_d: public.comm_d.into(),
                    comm_r: public.comm_r.into(),
                    comm_r_last: comm_r_last.into(),
                    comm_c: comm_c.into(),
                };
                ours.push(PoRepPartition::<Tree>::new(glue, challenges));
            }
            Cut::FilecoinProofs => theirs.push(
                StackedCompound::<Tree, DefaultPieceHasher>::circuit(
                    &public.pub_in,
                    (),
                    proofs,
                    &pp.vanilla_params,
                    Some(k),
                )
                .map_err(FilecoinError::proofs(format!(
                    "PoRep partition {k} circuit"
                )))?,
            ),
        }
        public_inputs.push(public.partition(k)?);
    }
    Ok(match cut {
        Cut::Ours => sink.take(Partitions {
            circuits: ours,
            public_inputs,
            parallel_witness: Some(parallel_witness::<Tree>),
        }),
        Cut::FilecoinProofs => sink.take(Partitions {
            circuits: theirs,
            public_inputs,
            parallel_witness: None,
        }),
    })
}

fn blank_shaped<Tree: 'static + MerkleTreeTrait, S: BlankSink>(
    registered: RegisteredSealProof,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let vp = public_params::<Tree>(&registered.as_v1_config())?.vanilla_params;
    Ok(sink.take(Remake(move || blank_circuit::<Tree>(&vp))))
}

/// filecoin-proofs' blank (witness-free) partition circuit for the vanilla parameters `vp`.
fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    vp: &stacked::PublicParams<Tree>,
) -> stacked::StackedCircuit<Tree, DefaultPieceHasher> {
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(vp)
}
