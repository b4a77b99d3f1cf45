//! WindowPoSt (one partition) and WinningPoSt: from the bincode `FallbackPoStSectorProof`s a
//! node's vanilla step produces, the circuit and public inputs of `FallbackPoStCompound`, as
//! filecoin-proofs' `generate_single_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` build them; the public inputs are those its verifiers
//! (`verify_window_post`, `verify_winning_post`) compute for that partition. [`WindowPoSt`] and
//! [`WinningPoSt`] are the two kinds' [`Compound`]s, over one input type and one circuit.

use std::collections::BTreeMap;

use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::types::{MerkleTreeTrait, PoStConfig};
use filecoin_proofs::{
    as_safe_commitment, parameters, single_partition_vanilla_proofs, FallbackPoStSectorProof,
    PoStType,
};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use crate::compound::Compound;
use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::request::decode_bincode;
use crate::shape::with_shape;
use crate::sink::{BlankSink, CircuitSink, Partitions, Remake};
use crate::verify;

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

/// One WindowPoSt partition (`FallbackPoStCompound` over a partition's sectors).
pub struct WindowPoSt;

/// WinningPoSt (`FallbackPoStCompound` over one sector).
pub struct WinningPoSt;

impl Compound for WindowPoSt {
    const KIND: ProofKind = ProofKind::WindowPoSt;
    type Proof = RegisteredPoStProof;
    type Input = PoStInput;

    fn registered(input: &PoStInput) -> RegisteredPoStProof {
        input.registered
    }

    fn build<S: CircuitSink>(input: PoStInput, sink: S) -> Result<S::Out, FilecoinError> {
        build(Self::KIND, input, sink)
    }

    fn blank<S: BlankSink>(
        registered: RegisteredPoStProof,
        sink: S,
    ) -> Result<S::Out, FilecoinError> {
        blank(Self::KIND, registered, sink)
    }

    /// The partition's, as `verify_window_post` computes them: the partition's sectors at its
    /// offset in the deadline.
    fn public_inputs(input: &PoStInput) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
        public_inputs(Self::KIND, input)
    }

    /// `verify_window_post`, which checks a whole deadline's proof: one partition is that proof
    /// only when it is partition 0 and holds every sector, so other partitions are refused.
    fn verify(input: &PoStInput, proof: &[u8]) -> Result<bool, FilecoinError> {
        expect_kind(Self::KIND, input.registered)?;
        verify::guarded(Registered::PoSt(input.registered), |ctx| {
            let replicas = replicas(input)?;
            if input.partition_index != 0 {
                return Err(FilecoinError::invalid(
                    "WindowPoSt verification",
                    format!("partition {}: verify_window_post takes whole proofs (partition 0 alone, or all partitions merged)", input.partition_index),
                ));
            }
            filecoin_proofs_api::post::verify_window_post(
                &input.randomness,
                &[(input.registered, proof)],
                &replicas,
                input.prover_id,
            )
            .map_err(FilecoinError::proofs(ctx))
        })
    }
}

impl Compound for WinningPoSt {
    const KIND: ProofKind = ProofKind::WinningPoSt;
    type Proof = RegisteredPoStProof;
    type Input = PoStInput;

    fn registered(input: &PoStInput) -> RegisteredPoStProof {
        input.registered
    }

    fn build<S: CircuitSink>(input: PoStInput, sink: S) -> Result<S::Out, FilecoinError> {
        build(Self::KIND, input, sink)
    }

    fn blank<S: BlankSink>(
        registered: RegisteredPoStProof,
        sink: S,
    ) -> Result<S::Out, FilecoinError> {
        blank(Self::KIND, registered, sink)
    }

    /// As `verify_winning_post` computes them: the sector listed once per challenge.
    fn public_inputs(input: &PoStInput) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
        public_inputs(Self::KIND, input)
    }

    /// `verify_winning_post`.
    fn verify(input: &PoStInput, proof: &[u8]) -> Result<bool, FilecoinError> {
        expect_kind(Self::KIND, input.registered)?;
        verify::guarded(Registered::PoSt(input.registered), |ctx| {
            let replicas = replicas(input)?;
            filecoin_proofs_api::post::verify_winning_post(
                &input.randomness,
                proof,
                &replicas,
                input.prover_id,
            )
            .map_err(FilecoinError::proofs(ctx))
        })
    }
}

/// Refuses a registered proof of the other PoSt kind than `kind`.
fn expect_kind(kind: ProofKind, registered: RegisteredPoStProof) -> Result<(), FilecoinError> {
    Registered::PoSt(registered).expect_kind(kind).map(|_| ())
}

fn build<S: CircuitSink>(
    kind: ProofKind,
    input: PoStInput,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    expect_kind(kind, input.registered)?;
    with_shape!(
        u64::from(input.registered.sector_size()),
        build_shaped<S>,
        input,
        sink
    )
}

fn blank<S: BlankSink>(
    kind: ProofKind,
    registered: RegisteredPoStProof,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    expect_kind(kind, registered)?;
    with_shape!(
        u64::from(registered.sector_size()),
        blank_shaped<S>,
        registered,
        sink
    )
}

fn public_inputs(kind: ProofKind, input: &PoStInput) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
    expect_kind(kind, input.registered)?;
    with_shape!(
        u64::from(input.registered.sector_size()),
        public_inputs_shaped,
        input
    )
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

/// A PoSt request checked against its registered proof: the compound parameters, the sector
/// proofs decoded, and the public values as domain elements.
struct Checked<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    pp: compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>>,
    proofs: Vec<FallbackPoStSectorProof<Tree>>,
    randomness: <Tree::Hasher as Hasher>::Domain,
    prover_id: <Tree::Hasher as Hasher>::Domain,
    /// The partition's sectors, in order.
    sectors: Vec<PublicSector<<Tree::Hasher as Hasher>::Domain>>,
    partition_index: usize,
}

impl<Tree: 'static + MerkleTreeTrait> Checked<Tree> {
    fn of(input: &PoStInput) -> Result<Self, FilecoinError> {
        let PoStInput {
            registered,
            vanilla_proofs,
            randomness,
            prover_id,
            partition_index,
        } = input;
        let partition_index = *partition_index;
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

        let randomness: <Tree::Hasher as Hasher>::Domain =
            as_safe_commitment(randomness, "randomness")
                .map_err(FilecoinError::proofs("randomness"))?;
        let prover_id: <Tree::Hasher as Hasher>::Domain =
            as_safe_commitment(prover_id, "prover_id")
                .map_err(FilecoinError::proofs("prover_id"))?;
        let sectors: Vec<PublicSector<_>> = proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect();
        Ok(Checked {
            config,
            pp,
            proofs,
            randomness,
            prover_id,
            sectors,
            partition_index,
        })
    }

    /// The partition's public inputs in the verifier's view of it.
    fn verifier_inputs(&self) -> Result<Vec<Scalar>, FilecoinError> {
        let (sectors, per_partition) = (&self.sectors, self.pp.vanilla_params.sector_count);
        let (verifier_sectors, k) = match self.config.typ.clone() {
            // Sectors of earlier partitions only shift the challenge indices; any values do there.
            PoStType::Window => {
                let mut v = vec![sectors[0].clone(); self.partition_index * per_partition];
                v.extend(sectors.iter().cloned());
                (v, self.partition_index)
            }
            // verify_winning_post lists the sector once per challenge.
            PoStType::Winning => (
                std::iter::repeat_n(sectors[0].clone(), per_partition).collect(),
                0,
            ),
        };
        let verifier_in = fallback::PublicInputs {
            randomness: self.randomness,
            prover_id: self.prover_id,
            sectors: verifier_sectors,
            k: None,
        };
        FallbackPoStCompound::<Tree>::generate_public_inputs(
            &verifier_in,
            &self.pp.vanilla_params,
            Some(k),
        )
        .map_err(FilecoinError::proofs(format!(
            "{} public inputs",
            what(self.config.typ.clone())
        )))
    }
}

fn build_shaped<Tree: 'static + MerkleTreeTrait, S: CircuitSink>(
    input: PoStInput,
    sink: S,
) -> Result<S::Out, FilecoinError> {
    let checked = Checked::<Tree>::of(&input)?;
    let Checked {
        config, pp, proofs, ..
    } = &checked;
    let name = what(config.typ.clone());
    // The prover's view: this partition's sectors only.
    let prover_in = fallback::PublicInputs {
        randomness: checked.randomness,
        prover_id: checked.prover_id,
        sectors: checked.sectors.clone(),
        k: Some(checked.partition_index),
    };
    let vanilla = single_partition_vanilla_proofs(config, &pp.vanilla_params, &prover_in, proofs)
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
    let inputs = checked.verifier_inputs()?;
    Ok(sink.take(Partitions {
        circuits: vec![circuit],
        public_inputs: vec![inputs],
        parallel_witness: None,
    }))
}

fn public_inputs_shaped<Tree: 'static + MerkleTreeTrait>(
    input: &PoStInput,
) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
    Ok(vec![Checked::<Tree>::of(input)?.verifier_inputs()?])
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

/// The sectors (id → public replica) of a PoSt request, from its vanilla proofs, as
/// filecoin-proofs' verifiers take them.
fn replicas(p: &PoStInput) -> Result<BTreeMap<SectorId, PublicReplicaInfo>, FilecoinError> {
    with_shape!(u64::from(p.registered.sector_size()), replicas_shaped, p)
}

fn replicas_shaped<Tree: 'static + MerkleTreeTrait>(
    p: &PoStInput,
) -> Result<BTreeMap<SectorId, PublicReplicaInfo>, FilecoinError> {
    let mut out = BTreeMap::new();
    for (i, b) in p.vanilla_proofs.iter().enumerate() {
        let v: FallbackPoStSectorProof<Tree> =
            decode_bincode(b, &format!("PoSt vanilla proof {i}"))?;
        let mut comm_r = [0u8; 32];
        comm_r.copy_from_slice(&v.comm_r.into_bytes());
        out.insert(v.sector_id, PublicReplicaInfo::new(p.registered, comm_r));
    }
    Ok(out)
}
