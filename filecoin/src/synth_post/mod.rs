//! The vanilla proofs of a WindowPoSt partition or a WinningPoSt over sparse synthetic sectors, at
//! any sector size up to 64 GiB, in seconds.
//!
//! The PoSt circuit checks, per sector, comm_r = H(comm_c, comm_r_last) and, per challenge, the
//! challenged leaf's path in the comm_r_last tree. The challenges depend on the randomness and the
//! sector numbers only (not on the sector's contents), so a sector in which only the challenged
//! leaves and their paths exist is enough: each sector's comm_r_last tree is sparse like
//! synth_c1's ([`crate::synth_c1::sparse`], [`sector`]). The challenges are drawn by
//! filecoin-proofs' own `generate_fallback_sector_challenges` from the randomness, the prover id
//! and the sector numbers, all drawn from the seed. The output is what the vanilla step of a node
//! hands over — one bincode `FallbackPoStSectorProof` per sector, in sector order — with the
//! randomness and prover id, and it passes filecoin-proofs' vanilla verification
//! ([`check::verify_proofs`]) before it is returned.
//!
//! WindowPoSt is partition 0 of a deadline, with the registered proof's full partition of sectors
//! by default (2349 at 32 GiB) and 10 challenges each; WinningPoSt is its one sector with 66.

pub mod check;
pub mod sector;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::{PoStType, RegisteredPoStProof, SectorId};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use typenum::Unsigned;

use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::request::ProofRequest;
use crate::sample::fr32_bytes;
use crate::shape::with_shape;
use crate::synth_c1::sparse;
use crate::synth_c1::writer::commitment;

/// Synthetic PoSt vanilla proofs and what went into them.
#[derive(Clone, Debug)]
pub struct SynthPoSt {
    pub registered: RegisteredPoStProof,
    pub prover_id: [u8; 32],
    /// The challenge randomness (`randomness[31] & 0xc0 == 0`).
    pub randomness: [u8; 32],
    /// The sectors' numbers (increasing) and comm_r, in the proofs' order.
    pub sectors: Vec<(u64, [u8; 32])>,
    /// One bincode `FallbackPoStSectorProof` per sector, in sector order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Challenges over all sectors.
    pub challenges: usize,
    pub elapsed: Duration,
}

impl SynthPoSt {
    pub fn kind(&self) -> ProofKind {
        Registered::PoSt(self.registered).kind()
    }

    /// The request of these proofs (WindowPoSt: partition 0).
    pub fn request(&self) -> ProofRequest {
        let registered = Registered::PoSt(self.registered).abi();
        let vanilla_proofs = self.vanilla_proofs.clone();
        match self.registered.typ() {
            PoStType::Window => ProofRequest::WindowPoSt {
                registered,
                vanilla_proofs,
                randomness: self.randomness,
                prover_id: self.prover_id,
                partition_index: 0,
            },
            PoStType::Winning => ProofRequest::WinningPoSt {
                registered,
                vanilla_proofs,
                randomness: self.randomness,
                prover_id: self.prover_id,
            },
        }
    }
}

/// The registered PoSt proof of `kind` (WindowPoSt or WinningPoSt) for a sector size written as
/// [`crate::synth_c1::registered_for`] takes it: the ones Lotus and Curio use
/// (`StackedDrgWindow…V1_2`, `StackedDrgWinning…V1`).
#[allow(deprecated)] // filecoin-proofs-api marks the seal → PoSt mappings deprecated.
pub fn registered_for(kind: ProofKind, size: &str) -> Result<RegisteredPoStProof, FilecoinError> {
    let seal = crate::synth_c1::registered_for(size)?;
    match kind {
        ProofKind::WindowPoSt => Ok(seal.into_window_post()),
        ProofKind::WinningPoSt => Ok(seal.into_winning_post()),
        other => Err(FilecoinError::invalid(
            "synthetic PoSt kind",
            format!("{other}: window-post or winning-post"),
        )),
    }
}

/// The synthetic vanilla proofs of `registered` over `sectors` sectors (default: the registered
/// proof's sector count, one partition; WinningPoSt takes exactly 1), everything drawn from
/// `seed`.
pub fn generate(
    registered: RegisteredPoStProof,
    sectors: Option<usize>,
    seed: u64,
) -> Result<SynthPoSt, FilecoinError> {
    with_shape!(
        u64::from(registered.sector_size()),
        generate_shaped,
        registered,
        sectors,
        seed
    )
}

fn generate_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    sectors: Option<usize>,
    seed: u64,
) -> Result<SynthPoSt, FilecoinError> {
    let start = Instant::now();
    let most = registered.sector_count();
    let n = sectors.unwrap_or(most);
    let ok = match registered.typ() {
        PoStType::Window => (1..=most).contains(&n),
        PoStType::Winning => n == 1,
    };
    if !ok {
        return Err(FilecoinError::invalid(
            format!("synthetic {registered:?}"),
            format!("{n} sectors: a partition takes 1 to {most}"),
        ));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5359_4e54_4850_4f53);
    let prover_id = fr32_bytes(&mut rng);
    let randomness = fr32_bytes(&mut rng);
    let mut ids = BTreeSet::new();
    while ids.len() < n {
        ids.insert(u64::from(rng.next_u32()));
    }
    let seeds: Vec<[u8; 32]> = (0..n)
        .map(|_| {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            s
        })
        .collect();
    let ids: Vec<u64> = ids.into_iter().collect();
    let sector_ids: Vec<SectorId> = ids.iter().copied().map(SectorId::from).collect();
    let challenges = filecoin_proofs_api::post::generate_fallback_sector_challenges(
        registered,
        &randomness,
        &sector_ids,
        prover_id,
    )
    .map_err(FilecoinError::proofs("generate_fallback_sector_challenges"))?;

    let levels = sparse::shape(
        u64::from(registered.sector_size()) / 32,
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    )?;
    let proofs = sector_ids
        .par_iter()
        .zip(seeds.par_iter())
        .map(|(id, s)| {
            let cs = challenges.get(id).ok_or_else(|| {
                FilecoinError::invalid(
                    format!("synthetic {registered:?}"),
                    format!("no challenges for sector {id}"),
                )
            })?;
            sector::prove::<Tree>(u64::from(*id), cs, &levels, *s)
        })
        .collect::<Result<Vec<_>, _>>()?;
    check::verify_proofs(registered, &proofs, &randomness, &prover_id, 0)?;

    let vanilla_proofs = proofs
        .par_iter()
        .map(|p| {
            bincode1::serialize(p).map_err(|e| {
                FilecoinError::invalid(format!("vanilla proof of sector {}", p.sector_id), e)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SynthPoSt {
        registered,
        prover_id,
        randomness,
        sectors: proofs
            .iter()
            .map(|p| (u64::from(p.sector_id), commitment(p.comm_r)))
            .collect(),
        vanilla_proofs,
        challenges: challenges.values().map(Vec::len).sum(),
        elapsed: start.elapsed(),
    })
}
