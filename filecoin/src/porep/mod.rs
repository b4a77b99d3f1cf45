//! PoRep C2: from a `SealCommitPhase1Output` (the JSON a node's C1 step writes) to the partition
//! circuits and public inputs, exactly as filecoin-proofs' `seal_commit_phase2` builds them.
//!
//! The partition circuit proved is cuzk's cut of filecoin-proofs' (`circuit.rs`, its SHA-256
//! `sha256_lean/`), its witness synthesized a challenge per thread (`witness.rs`).

pub mod circuit;
pub mod sha256_lean;
pub mod witness;

use std::any::Any;

use filecoin_hashers::Domain;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig, VanillaSealProof as RawProof};
use filecoin_proofs::{as_safe_commitment, parameters::setup_params, DefaultPieceDomain};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use crate::error::FilecoinError;
use crate::registered::Registered;
use crate::shape::with_shape;
use crate::sink::{BlankSink, CircuitSink, Partitions, Remake};

use circuit::{ChallengeInputs, Glue};
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

    pub fn registered(&self) -> Registered {
        Registered::Seal(self.c1.registered_proof)
    }

    /// Hands the partition circuits to `sink`.
    pub fn build<S: CircuitSink>(self, sink: S) -> Result<S::Out, FilecoinError> {
        let size = u64::from(self.c1.registered_proof.sector_size());
        with_shape!(size, build_shaped<S>, self.c1, sink, Cut::Ours)
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
    v: VanillaSealProof,
    size: u64,
) -> Result<Vec<Vec<RawProof<Tree>>>, FilecoinError> {
    use filecoin_proofs::constants as c;
    let (raw, of): (Box<dyn Any>, u64) = match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => (Box::new(p), c::SECTOR_SIZE_2_KIB),
        VanillaSealProof::StackedDrg8MiBV1(p) => (Box::new(p), c::SECTOR_SIZE_8_MIB),
        VanillaSealProof::StackedDrg512MiBV1(p) => (Box::new(p), c::SECTOR_SIZE_512_MIB),
        VanillaSealProof::StackedDrg32GiBV1(p) => (Box::new(p), c::SECTOR_SIZE_32_GIB),
        VanillaSealProof::StackedDrg64GiBV1(p) => (Box::new(p), c::SECTOR_SIZE_64_GIB),
    };
    if of != size {
        return Err(FilecoinError::invalid("C1 output", format!("its vanilla proofs are for {of}-byte sectors, its registered proof for {size}-byte sectors")));
    }
    raw.downcast::<Vec<Vec<RawProof<Tree>>>>()
        .map(|b| *b)
        .map_err(|_| FilecoinError::invalid("C1 output", "vanilla proofs of another tree shape"))
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

/// Whose partition circuit `build_shaped` makes.
#[derive(Clone, Copy)]
enum Cut {
    /// `circuit.rs`, challenges synthesized in parallel (what is proved).
    Ours,
    /// filecoin-proofs' `StackedCircuit`.
    FilecoinProofs,
}

fn build_shaped<Tree: 'static + MerkleTreeTrait, S: CircuitSink>(
    c1: SealCommitPhase1Output,
    sink: S,
    cut: Cut,
) -> Result<S::Out, FilecoinError> {
    let registered = c1.registered_proof;
    let config = registered.as_v1_config();
    let size = u64::from(registered.sector_size());
    let SealCommitPhase1Output {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ..
    } = c1;
    let what = "C1 output";
    if comm_d == [0; 32] || comm_r == [0; 32] {
        return Err(FilecoinError::invalid(what, "an all-zero comm_d or comm_r"));
    }
    if seed == [0; 32] {
        return Err(FilecoinError::invalid(what, "an all-zero challenge seed"));
    }
    let vanilla_proofs = vanilla::<Tree>(vanilla_proofs, size)?;
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
    let comm_r_safe =
        as_safe_commitment(&comm_r, "comm_r").map_err(FilecoinError::proofs("comm_r"))?;
    let comm_d_safe =
        DefaultPieceDomain::try_from_bytes(&comm_d).map_err(FilecoinError::proofs("comm_d"))?;
    // The replica id as a tree-hasher domain element of `Tree` (the same Poseidon domain).
    let replica_id = <Tree::Hasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(
        &replica_id.into_bytes(),
    )
    .map_err(FilecoinError::proofs("replica_id"))?;
    let pub_in = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau {
            comm_d: comm_d_safe,
            comm_r: comm_r_safe,
        }),
        k: None,
        seed: Some(seed),
    };

    let pp = public_params::<Tree>(&config)?;
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
                    replica_id: replica_id.into(),
                    comm_d: comm_d_safe.into(),
                    comm_r: comm_r_safe.into(),
                    comm_r_last: comm_r_last.into(),
                    comm_c: comm_c.into(),
                };
                ours.push(PoRepPartition::<Tree>::new(glue, challenges));
            }
            Cut::FilecoinProofs => theirs.push(
                StackedCompound::<Tree, DefaultPieceHasher>::circuit(
                    &pub_in,
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
        public_inputs.push(
            StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
                &pub_in,
                &pp.vanilla_params,
                Some(k),
            )
            .map_err(FilecoinError::proofs(format!(
                "PoRep partition {k} public inputs"
            )))?,
        );
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

/// The blank (witness-free) partition circuit of `registered`, for parameter generation and
/// shape checks.
pub fn blank<S: BlankSink>(
    registered: filecoin_proofs_api::RegisteredSealProof,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        blank_shaped<S>,
        registered,
        sink
    )
}

fn blank_shaped<Tree: 'static + MerkleTreeTrait, S: BlankSink>(
    registered: filecoin_proofs_api::RegisteredSealProof,
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

/// A PoRep partition's recording made from its blank circuit, before its parameters exist (the
/// setup can run beside it), under the key the proving path looks it up by.
pub struct BlankRecording {
    key: &'static str,
    rec: cuzk_engine::recorded::Recording,
}

/// Records `registered`'s partition circuit from its blank circuit (no values; one thread).
/// Constraint structure does not depend on the witness in a Filecoin circuit, so this is the
/// recording the first proof would make; a proof that drifted from it is still caught by the
/// recorded path's sampled rows, its periodic full synthesis and self-verification.
pub fn record_blank(
    registered: filecoin_proofs_api::RegisteredSealProof,
) -> Result<BlankRecording, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        record_blank_shaped,
        registered
    )
}

fn record_blank_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: filecoin_proofs_api::RegisteredSealProof,
) -> Result<BlankRecording, FilecoinError> {
    let vp = public_params::<Tree>(&registered.as_v1_config())?.vanilla_params;
    let (rec, _) = cuzk_engine::recorded::record(blank_circuit::<Tree>(&vp), false, 0)?;
    Ok(BlankRecording {
        key: cuzk_engine::recorded::RecordingCache::key_of::<PoRepPartition<Tree>>(),
        rec,
    })
}

impl BlankRecording {
    /// The recording itself.
    pub fn recording(&self) -> &cuzk_engine::recorded::Recording {
        &self.rec
    }
    /// Holds the recording in the process-wide cache for proofs against `srs` (refused if it
    /// does not fit them).
    pub fn install(self, srs: &cuzk_srs::Srs) -> Result<(), FilecoinError> {
        let rec = self
            .rec
            .bind(self.key, cuzk_engine::recorded::ParamsBinding::of(srs));
        cuzk_engine::recorded::RecordingCache::global().insert(self.key, srs, rec)?;
        Ok(())
    }
}
