//! WindowPoSt (one partition) and WinningPoSt: from the bincode `FallbackPoStSectorProof`s a
//! node's vanilla step produces, the circuit and public inputs of `FallbackPoStCompound`, as
//! filecoin-proofs' `generate_single_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` build them; the public inputs are those its verifiers
//! (`verify_window_post`, `verify_winning_post`) compute for that partition.

use filecoin_hashers::Hasher;
use filecoin_proofs::types::{MerkleTreeTrait, PoStConfig};
use filecoin_proofs::{
    as_safe_commitment, parameters, single_partition_vanilla_proofs, FallbackPoStSectorProof,
    PoStType,
};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use crate::error::FilecoinError;
use crate::registered::Registered;
use crate::request::decode_bincode;
use crate::shape::with_shape;
use crate::sink::{BlankSink, CircuitSink, Partitions, Remake};

#[derive(Clone, Debug)]
pub struct PoStInput {
    pub registered: RegisteredPoStProof,
    /// bincode `FallbackPoStSectorProof`s: a WindowPoSt partition's sectors in order (at most the
    /// partition's sector count; the last is repeated to fill), or a WinningPoSt's one sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The challenge randomness (callers mask `randomness[31] &= 0x3f`).
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// WindowPoSt: which partition of the deadline's sectors this is (WinningPoSt: 0).
    pub partition_index: usize,
}

impl PoStInput {
    pub fn registered(&self) -> Registered {
        Registered::PoSt(self.registered)
    }

    pub fn build<S: CircuitSink>(self, sink: S) -> Result<S::Out, FilecoinError> {
        with_shape!(
            u64::from(self.registered.sector_size()),
            build_shaped<S>,
            self,
            sink
        )
    }
}

fn what(typ: PoStType) -> &'static str {
    match typ {
        PoStType::Window => "WindowPoSt",
        PoStType::Winning => "WinningPoSt",
    }
}

fn setup<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>>, FilecoinError> {
    let vanilla_params = match config.typ.clone() {
        PoStType::Window => parameters::window_post_setup_params(config),
        PoStType::Winning => parameters::winning_post_setup_params(config)
            .map_err(FilecoinError::proofs("WinningPoSt setup parameters"))?,
    };
    FallbackPoStCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions: None,
        priority: false,
    })
    .map_err(FilecoinError::proofs(format!(
        "{} public parameters",
        what(config.typ.clone())
    )))
}

fn build_shaped<Tree: 'static + MerkleTreeTrait, S: CircuitSink>(
    input: PoStInput,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let PoStInput {
        registered,
        vanilla_proofs,
        randomness,
        prover_id,
        partition_index,
    } = input;
    let config = registered.as_v1_config();
    let name = what(config.typ.clone());
    let pp = setup::<Tree>(&config)?;
    let per_partition = pp.vanilla_params.sector_count;
    let challenges = pp.vanilla_params.challenge_count;

    let proofs: Vec<FallbackPoStSectorProof<Tree>> = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| decode_bincode(b, &format!("{name} vanilla proof {i}")))
        .collect::<Result<_, _>>()?;
    match config.typ.clone() {
        PoStType::Window => {
            if proofs.is_empty() || proofs.len() > per_partition {
                return Err(FilecoinError::invalid(
                    format!("{name} request"),
                    format!(
                        "{} sector proofs; a partition takes 1 to {per_partition}",
                        proofs.len()
                    ),
                ));
            }
        }
        PoStType::Winning => {
            if proofs.len() != config.sector_count || partition_index != 0 {
                return Err(FilecoinError::invalid(format!("{name} request"), format!("{} sector proofs and partition {partition_index}; it takes {} and partition 0", proofs.len(), config.sector_count)));
            }
        }
    }
    // The vanilla proof of each sector holds one sector proof with its challenges' inclusion
    // proofs (filecoin-proofs indexes these without checking).
    let want = match config.typ.clone() {
        PoStType::Window => challenges,
        PoStType::Winning => config.challenge_count,
    };
    for (i, p) in proofs.iter().enumerate() {
        let s = &p.vanilla_proof.sectors;
        if s.len() != 1 || s[0].inclusion_proofs.len() != want {
            return Err(FilecoinError::invalid(
                format!("{name} vanilla proof {i} (sector {})", p.sector_id),
                format!(
                    "{} sector proofs with {:?} inclusion proofs; 1 with {want} expected",
                    s.len(),
                    s.iter()
                        .map(|x| x.inclusion_proofs.len())
                        .collect::<Vec<_>>()
                ),
            ));
        }
    }
    for w in proofs.windows(2) {
        if w[0].sector_id >= w[1].sector_id {
            return Err(FilecoinError::invalid(
                format!("{name} request"),
                format!(
                    "sector proofs not in increasing sector order ({} then {})",
                    w[0].sector_id, w[1].sector_id
                ),
            ));
        }
    }

    let randomness_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&randomness, "randomness")
            .map_err(FilecoinError::proofs("randomness"))?;
    let prover_id_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&prover_id, "prover_id").map_err(FilecoinError::proofs("prover_id"))?;
    let sectors: Vec<PublicSector<_>> = proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();

    // The prover's view: this partition's sectors only.
    let prover_in = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors: sectors.clone(),
        k: Some(partition_index),
    };
    let vanilla = single_partition_vanilla_proofs(&config, &pp.vanilla_params, &prover_in, &proofs)
        .map_err(FilecoinError::proofs(format!("{name} partition proof")))?;
    let circuit = FallbackPoStCompound::<Tree>::circuit(
        &prover_in,
        Default::default(),
        &vanilla,
        &pp.vanilla_params,
        Some(0),
    )
    .map_err(FilecoinError::proofs(format!("{name} circuit")))?;

    // The verifier's view of the same partition.
    let (verifier_sectors, k) = match config.typ.clone() {
        // Sectors of earlier partitions only shift the challenge indices; any values do there.
        PoStType::Window => {
            let mut v = vec![sectors[0].clone(); partition_index * per_partition];
            v.extend(sectors);
            (v, partition_index)
        }
        // verify_winning_post lists the sector once per challenge.
        PoStType::Winning => (
            std::iter::repeat_n(sectors[0].clone(), per_partition).collect(),
            0,
        ),
    };
    let verifier_in = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors: verifier_sectors,
        k: None,
    };
    let inputs = FallbackPoStCompound::<Tree>::generate_public_inputs(
        &verifier_in,
        &pp.vanilla_params,
        Some(k),
    )
    .map_err(FilecoinError::proofs(format!("{name} public inputs")))?;
    Ok(sink.take(Partitions {
        circuits: vec![circuit],
        public_inputs: vec![inputs],
        parallel_witness: None,
    }))
}

/// The blank circuit of `registered`.
pub fn blank<S: BlankSink>(
    registered: RegisteredPoStProof,
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
    registered: RegisteredPoStProof,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let pp = setup::<Tree>(&registered.as_v1_config())?;
    let vp = pp.vanilla_params;
    Ok(sink.take(Remake(move || {
        FallbackPoStCompound::<Tree>::blank_circuit(&vp)
    })))
}
