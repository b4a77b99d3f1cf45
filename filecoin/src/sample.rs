//! Real inputs made on the spot with filecoin-proofs on the CPU, for tests and benchmarks: a
//! sealed sector and its C1 output (add_piece, PC1, PC2, C1), a SnapDeals update of it, and the
//! vanilla proofs of WindowPoSt and WinningPoSt over sealed sectors. Deterministic in `seed`.
//! A 2 KiB sector seals in milliseconds; 8 MiB and 512 MiB take seconds to minutes.
//!
//! filecoin-proofs keeps its graph parent cache in `$FIL_PROOFS_PARENT_CACHE` (default
//! `/var/tmp/filecoin-parents`).

// filecoin-proofs-api marks the seal → PoSt proof mappings deprecated; they are what Lotus uses.
#![allow(deprecated)]

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use filecoin_proofs_api::seal::{self, SealCommitPhase1Output};
use filecoin_proofs_api::{
    post, update, PieceInfo, PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof,
    RegisteredUpdateProof, SectorId, UnpaddedBytesAmount,
};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::FilecoinError;
use crate::request::ProofRequest;

/// A sector sealed by [`seal`], with everything its proofs need.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub registered: RegisteredSealProof,
    pub cache: PathBuf,
    pub replica: PathBuf,
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub pieces: Vec<PieceInfo>,
    /// The C1 output as filecoin-proofs-api serialises it.
    pub c1_json: Vec<u8>,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> FilecoinError {
    move |e| FilecoinError::invalid(what, e)
}

fn proofs(what: &str) -> impl FnOnce(anyhow::Error) -> FilecoinError {
    FilecoinError::proofs(what.to_string())
}

/// 32 random bytes that are a valid field element (the top two bits clear), as tickets, seeds,
/// prover ids and PoSt randomness must be.
pub fn fr32_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    b
}

/// One full-sector piece of random data written to `path` (Fr32-padded, as add_piece does).
fn write_piece(
    registered: RegisteredSealProof,
    path: &Path,
    rng: &mut impl RngCore,
) -> Result<PieceInfo, FilecoinError> {
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs::types::PaddedBytesAmount(u64::from(
        registered.sector_size(),
    )));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let target = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io(format!("{}", path.display())))?;
    let (piece, _) = seal::add_piece(registered, data.as_slice(), target, unpadded, &[])
        .map_err(proofs("add_piece"))?;
    Ok(piece)
}

/// Seals a sector of `registered` under `dir` (a folder of its own per sector) and runs C1; the
/// prover id is `prover_id`, or drawn from `seed`.
pub fn seal(
    registered: RegisteredSealProof,
    dir: &Path,
    sector_id: u64,
    seed: u64,
    prover_id: Option<[u8; 32]>,
) -> Result<Sealed, FilecoinError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).map_err(io(format!("{}", cache.display())))?;
    let staged = dir.join("staged");
    let replica = dir.join("sealed");
    let piece = write_piece(registered, &staged, &mut rng)?;
    File::create(&replica).map_err(io(format!("{}", replica.display())))?;
    let drawn = fr32_bytes(&mut rng);
    let prover_id = prover_id.unwrap_or(drawn);
    let ticket = fr32_bytes(&mut rng);
    let challenge_seed = fr32_bytes(&mut rng);
    let pieces = vec![piece];
    let sid = SectorId::from(sector_id);

    let pc1 = seal::seal_pre_commit_phase1(
        registered, &cache, &staged, &replica, prover_id, sid, ticket, &pieces,
    )
    .map_err(proofs("seal_pre_commit_phase1"))?;
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache, &replica)
        .map_err(proofs("seal_pre_commit_phase2"))?;
    if registered.feature_enabled(filecoin_proofs_api::ApiFeature::SyntheticPoRep) {
        seal::generate_synth_proofs(
            &cache,
            &replica,
            prover_id,
            sid,
            ticket,
            pc2.clone(),
            &pieces,
        )
        .map_err(proofs("generate_synth_proofs"))?;
    }
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let c1: SealCommitPhase1Output = seal::seal_commit_phase1(
        &cache,
        &replica,
        prover_id,
        sid,
        ticket,
        challenge_seed,
        pc2,
        &pieces,
    )
    .map_err(proofs("seal_commit_phase1"))?;
    let c1_json = serde_json::to_vec(&c1).map_err(|e| FilecoinError::invalid("C1 output", e))?;
    Ok(Sealed {
        registered,
        cache,
        replica,
        prover_id,
        sector_id,
        ticket,
        seed: challenge_seed,
        comm_r,
        comm_d,
        pieces,
        c1_json,
    })
}

impl Sealed {
    /// The PoRep C2 request of this sector.
    pub fn porep_request(&self) -> ProofRequest {
        ProofRequest::PoRep {
            c1_json: self.c1_json.clone(),
            prover_id: Some(self.prover_id),
            sector_id: Some(self.sector_id),
        }
    }
}

/// The update proof that goes with a seal proof.
pub fn update_proof_of(
    registered: RegisteredSealProof,
) -> Result<RegisteredUpdateProof, FilecoinError> {
    use RegisteredUpdateProof::*;
    Ok(match u64::from(registered.sector_size()) {
        s if s == 2 << 10 => StackedDrg2KiBV1,
        s if s == 8 << 20 => StackedDrg8MiBV1,
        s if s == 512 << 20 => StackedDrg512MiBV1,
        s if s == 32 << 30 => StackedDrg32GiBV1,
        s if s == 64 << 30 => StackedDrg64GiBV1,
        s => return Err(FilecoinError::SectorSize(s)),
    })
}

/// Encodes new random data into `sealed` (its replica is the sector key) under `dir` and returns
/// the SnapDeals request with its vanilla partition proofs.
pub fn snap(sealed: &Sealed, dir: &Path, seed: u64) -> Result<ProofRequest, FilecoinError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let registered = update_proof_of(sealed.registered)?;
    let new_cache = dir.join("update-cache");
    std::fs::create_dir_all(&new_cache).map_err(io(format!("{}", new_cache.display())))?;
    let staged = dir.join("update-staged");
    let new_replica = dir.join("update-sealed");
    let piece = write_piece(sealed.registered, &staged, &mut rng)?;
    // encode_into writes the new replica in place: a file of the sector key's size.
    let f = File::create(&new_replica).map_err(io(format!("{}", new_replica.display())))?;
    f.set_len(u64::from(sealed.registered.sector_size()))
        .map_err(io(format!("{}", new_replica.display())))?;
    let enc = update::empty_sector_update_encode_into(
        registered,
        &new_replica,
        &new_cache,
        &sealed.replica,
        &sealed.cache,
        &staged,
        &[piece],
    )
    .map_err(proofs("empty_sector_update_encode_into"))?;
    let vanilla = update::generate_partition_proofs(
        registered,
        sealed.comm_r,
        enc.comm_r_new,
        enc.comm_d_new,
        &sealed.replica,
        &sealed.cache,
        &new_replica,
        &new_cache,
    )
    .map_err(proofs("generate_partition_proofs"))?;
    Ok(ProofRequest::SnapDeals {
        registered: crate::Registered::Update(registered).abi(),
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
        comm_r_old: sealed.comm_r,
        comm_r_new: enc.comm_r_new,
        comm_d_new: enc.comm_d_new,
    })
}

fn vanilla_proof(
    registered: RegisteredPoStProof,
    s: &Sealed,
    challenges: &[u64],
) -> Result<Vec<u8>, FilecoinError> {
    let replica = PrivateReplicaInfo::new(registered, s.comm_r, s.cache.clone(), s.replica.clone());
    post::generate_single_vanilla_proof(
        registered,
        SectorId::from(s.sector_id),
        &replica,
        challenges,
    )
    .map_err(proofs("generate_single_vanilla_proof"))
}

/// The WindowPoSt request for partition 0 over `sectors` (sorted by sector number; at most one
/// partition's worth), sharing one prover id, with randomness from `seed`.
pub fn window_post(
    sectors: &[Sealed],
    prover_id: [u8; 32],
    seed: u64,
) -> Result<ProofRequest, FilecoinError> {
    let first = sectors
        .first()
        .ok_or_else(|| FilecoinError::invalid("WindowPoSt sample", "no sectors"))?;
    let registered = first.registered.into_window_post();
    let randomness = fr32_bytes(&mut ChaCha20Rng::seed_from_u64(seed));
    let ids: Vec<SectorId> = sectors
        .iter()
        .map(|s| SectorId::from(s.sector_id))
        .collect();
    let challenges =
        post::generate_fallback_sector_challenges(registered, &randomness, &ids, prover_id)
            .map_err(proofs("generate_fallback_sector_challenges"))?;
    let mut vanilla_proofs = Vec::new();
    for s in sectors {
        let c = challenges
            .get(&SectorId::from(s.sector_id))
            .ok_or_else(|| {
                FilecoinError::invalid("WindowPoSt sample", "no challenges for a sector")
            })?;
        vanilla_proofs.push(vanilla_proof(registered, s, c)?);
    }
    Ok(ProofRequest::WindowPoSt {
        registered: crate::Registered::PoSt(registered).abi(),
        vanilla_proofs,
        randomness,
        prover_id,
        partition_index: 0,
    })
}

/// The WinningPoSt request over the single sector `sector`, with randomness from `seed`.
pub fn winning_post(
    sector: &Sealed,
    prover_id: [u8; 32],
    seed: u64,
) -> Result<ProofRequest, FilecoinError> {
    let registered = sector.registered.into_winning_post();
    let randomness = fr32_bytes(&mut ChaCha20Rng::seed_from_u64(seed));
    let chosen =
        post::generate_winning_post_sector_challenge(registered, &randomness, 1, prover_id)
            .map_err(proofs("generate_winning_post_sector_challenge"))?;
    if chosen != [0] {
        return Err(FilecoinError::invalid(
            "WinningPoSt sample",
            format!("challenged sector indices {chosen:?} out of a set of one"),
        ));
    }
    let id = SectorId::from(sector.sector_id);
    let challenges =
        post::generate_fallback_sector_challenges(registered, &randomness, &[id], prover_id)
            .map_err(proofs("generate_fallback_sector_challenges"))?;
    let c = challenges.get(&id).ok_or_else(|| {
        FilecoinError::invalid("WinningPoSt sample", "no challenges for the sector")
    })?;
    Ok(ProofRequest::WinningPoSt {
        registered: crate::Registered::PoSt(registered).abi(),
        vanilla_proofs: vec![vanilla_proof(registered, sector, c)?],
        randomness,
        prover_id,
    })
}
