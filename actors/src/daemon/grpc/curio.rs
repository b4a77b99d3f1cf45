//! Curio's requests as cuzk's: a `SubmitProofRequest` as Curio's client fills it (see
//! `shared/curio-grpc.md`) becomes a [`ProofRequest`]; circuit ids (`porep-32g`, `wpost-32g`,
//! `winning-32g`, `snap-32g`) name registered proofs; Curio's four priorities map onto the
//! engine's three classes.

use base64::Engine as _;
use cuzk_filecoin::registered::{post_from_abi, seal_from_abi, update_from_abi};
use cuzk_filecoin::request::prover_id_of_miner;
use cuzk_filecoin::{ProofRequest, Registered};
use serde::Deserialize;

use super::pb;
use crate::pipeline::job::Priority;

/// A request that cannot be proved as it stands (answered `INVALID_ARGUMENT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn invalid<T>(s: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(s.into()))
}

/// The PoRep `vanilla_proof` Curio sends: the C1 output, base64, with the sector's number and size.
#[derive(Deserialize)]
struct PoRepWrapper {
    #[serde(rename = "SectorNum", default)]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize", default)]
    sector_size: u64,
}

fn bytes32(what: &str, b: &[u8]) -> Result<[u8; 32], Invalid> {
    <[u8; 32]>::try_from(b).map_err(|_| Invalid(format!("{what}: {} bytes, expected 32", b.len())))
}

fn vanilla_proofs(r: &pb::SubmitProofRequest, what: &str) -> Result<Vec<Vec<u8>>, Invalid> {
    if r.vanilla_proofs.is_empty() {
        return invalid(format!(
            "vanilla_proofs is empty: a {what} request carries one bincode proof per {}",
            if what == "SnapDeals" {
                "partition"
            } else {
                "sector"
            }
        ));
    }
    Ok(r.vanilla_proofs.clone())
}

/// A registered proof's sector size against the request's `sector_size` (0 = not given).
fn check_size(r: &pb::SubmitProofRequest, reg: Registered) -> Result<(), Invalid> {
    let size = reg.sector_size();
    if r.sector_size != 0 && r.sector_size != size {
        return invalid(format!(
            "sector_size {} but registered_proof {} is for {size}-byte sectors",
            r.sector_size, r.registered_proof
        ));
    }
    Ok(())
}

/// What to prove, and the registered proof the request names (a PoRep's C1 output must agree).
pub fn to_proof_request(r: &pb::SubmitProofRequest) -> Result<(ProofRequest, Registered), Invalid> {
    let bad = |e: cuzk_filecoin::FilecoinError| Invalid(format!("registered_proof: {e}"));
    match pb::ProofKind::try_from(r.proof_kind) {
        Ok(pb::ProofKind::PorepSealCommit) => {
            let reg = Registered::Seal(seal_from_abi(r.registered_proof).map_err(bad)?);
            check_size(r, reg)?;
            let w: PoRepWrapper = serde_json::from_slice(&r.vanilla_proof).map_err(|e| {
                Invalid(format!("vanilla_proof ({} bytes) is not Curio's PoRep JSON {{\"SectorNum\", \"Phase1Out\": base64, \"SectorSize\"}}: {e}", r.vanilla_proof.len()))
            })?;
            let c1_json = base64::engine::general_purpose::STANDARD.decode(w.phase1_out.as_bytes()).map_err(|e| Invalid(format!("vanilla_proof.Phase1Out is not base64: {e}")))?;
            if w.sector_size != 0 && w.sector_size != reg.sector_size() {
                return invalid(format!("vanilla_proof.SectorSize {} but registered_proof {} is for {}-byte sectors", w.sector_size, r.registered_proof, reg.sector_size()));
            }
            if r.sector_number != 0 && w.sector_num != 0 && r.sector_number != w.sector_num {
                return invalid(format!("sector_number {} but vanilla_proof.SectorNum {}", r.sector_number, w.sector_num));
            }
            let sector = if r.sector_number != 0 { r.sector_number } else { w.sector_num };
            Ok((ProofRequest::PoRep { c1_json, prover_id: Some(prover_id_of_miner(r.miner_id)), sector_id: Some(sector) }, reg))
        }
        Ok(pb::ProofKind::SnapDealsUpdate) => {
            let reg = Registered::Update(update_from_abi(r.registered_proof).map_err(bad)?);
            check_size(r, reg)?;
            let req = ProofRequest::SnapDeals {
                registered: r.registered_proof,
                vanilla_proofs: vanilla_proofs(r, "SnapDeals")?,
                comm_r_old: bytes32("comm_r_old", &r.comm_r_old)?,
                comm_r_new: bytes32("comm_r_new", &r.comm_r_new)?,
                comm_d_new: bytes32("comm_d_new", &r.comm_d_new)?,
            };
            Ok((req, reg))
        }
        Ok(k @ (pb::ProofKind::WindowPostPartition | pb::ProofKind::WinningPost)) => {
            let reg = Registered::PoSt(post_from_abi(r.registered_proof).map_err(bad)?);
            check_size(r, reg)?;
            let window = k == pb::ProofKind::WindowPostPartition;
            let want = if window { cuzk_filecoin::ProofKind::WindowPoSt } else { cuzk_filecoin::ProofKind::WinningPoSt };
            if reg.kind() != want {
                return invalid(format!("registered_proof {} is a {} proof, not {want}", r.registered_proof, reg.kind()));
            }
            let what = if window { "WindowPoSt" } else { "WinningPoSt" };
            let (vanilla_proofs, randomness, prover_id) = (vanilla_proofs(r, what)?, bytes32("randomness", &r.randomness)?, prover_id_of_miner(r.miner_id));
            let req = if window {
                ProofRequest::WindowPoSt { registered: r.registered_proof, vanilla_proofs, randomness, prover_id, partition_index: u64::from(r.partition_index) }
            } else {
                ProofRequest::WinningPoSt { registered: r.registered_proof, vanilla_proofs, randomness, prover_id }
            };
            Ok((req, reg))
        }
        Ok(pb::ProofKind::Unspecified) => invalid("proof_kind is PROOF_KIND_UNSPECIFIED: set POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), WINDOW_POST_PARTITION (3) or WINNING_POST (4)"),
        Err(_) => invalid(format!("unknown proof_kind {}: this engine proves POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), WINDOW_POST_PARTITION (3) and WINNING_POST (4)", r.proof_kind)),
    }
}

/// Curio's priority onto the engine's classes: CRITICAL → High, HIGH → Normal, NORMAL and LOW →
/// Low (Curio sends CRITICAL for WinningPoSt, HIGH for WindowPoSt, NORMAL for PoRep and SnapDeals:
/// the engine's own order by kind); unspecified or unknown → `by_kind`.
pub fn priority(p: i32, by_kind: Priority) -> Priority {
    match pb::Priority::try_from(p) {
        Ok(pb::Priority::Critical) => Priority::High,
        Ok(pb::Priority::High) => Priority::Normal,
        Ok(pb::Priority::Normal | pb::Priority::Low) => Priority::Low,
        _ => by_kind,
    }
}

const SIZES: [(&str, u64); 5] = [
    ("2k", 2 << 10),
    ("8m", 8 << 20),
    ("512m", 512 << 20),
    ("32g", 32 << 30),
    ("64g", 64 << 30),
];

/// The circuit id of a registered proof: `porep-32g`, `porep-ni-32g` (non-interactive PoRep),
/// `snap-32g`, `wpost-32g`, `winning-32g`.
pub fn circuit_id(reg: Registered) -> String {
    let size = SIZES
        .iter()
        .find(|(_, b)| *b == reg.sector_size())
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| format!("{}b", reg.sector_size()));
    let kind = match reg {
        Registered::Seal(_) if reg.abi() >= 15 => "porep-ni",
        Registered::Seal(_) => "porep",
        Registered::Update(_) => "snap",
        Registered::PoSt(_) if reg.kind() == cuzk_filecoin::ProofKind::WindowPoSt => "wpost",
        Registered::PoSt(_) => "winning",
    };
    format!("{kind}-{size}")
}

/// The registered proof a circuit id names (PoRep as V1_1, WindowPoSt as V1_2: the versions
/// Curio seals and proves with).
pub fn parse_circuit_id(id: &str) -> Result<Registered, Invalid> {
    let usage = "circuit ids are <kind>-<size>: kind porep, porep-ni, snap, wpost or winning; size 2k, 8m, 512m, 32g or 64g (e.g. porep-32g); or a .params file path";
    let lower = id.trim().to_ascii_lowercase();
    let Some((kind, size)) = lower.rsplit_once('-') else {
        return invalid(format!("circuit id `{id}`: {usage}"));
    };
    let size = size.trim_end_matches("ib").trim_end_matches('b');
    let Some(i) = SIZES.iter().position(|(n, _)| *n == size) else {
        return invalid(format!("circuit id `{id}`: unknown size; {usage}"));
    };
    let i = i as u64;
    let r = match kind {
        "porep" => seal_from_abi(5 + i).map(Registered::Seal),
        "porep-ni" => seal_from_abi(15 + i).map(Registered::Seal),
        "snap" => update_from_abi(i).map(Registered::Update),
        "wpost" => post_from_abi(10 + i).map(Registered::PoSt),
        "winning" => post_from_abi(i).map(Registered::PoSt),
        _ => return invalid(format!("circuit id `{id}`: unknown kind `{kind}`; {usage}")),
    };
    r.map_err(|e| Invalid(format!("circuit id `{id}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_round_trip_and_bad_ones_are_named() {
        for id in [
            "porep-2k",
            "porep-32g",
            "porep-ni-64g",
            "snap-512m",
            "wpost-32g",
            "winning-8m",
        ] {
            assert_eq!(circuit_id(parse_circuit_id(id).unwrap()), id);
        }
        assert_eq!(
            parse_circuit_id("PoRep-32GiB").unwrap(),
            parse_circuit_id("porep-32g").unwrap()
        );
        assert!(parse_circuit_id("porep-3g")
            .unwrap_err()
            .0
            .contains("unknown size"));
        assert!(parse_circuit_id("sealing-32g")
            .unwrap_err()
            .0
            .contains("unknown kind"));
        assert!(parse_circuit_id("porep")
            .unwrap_err()
            .0
            .contains("<kind>-<size>"));
    }

    #[test]
    fn curio_priorities_keep_the_engines_order() {
        assert_eq!(
            priority(pb::Priority::Critical as i32, Priority::Low),
            Priority::High
        );
        assert_eq!(
            priority(pb::Priority::High as i32, Priority::Low),
            Priority::Normal
        );
        assert_eq!(
            priority(pb::Priority::Normal as i32, Priority::High),
            Priority::Low
        );
        assert_eq!(priority(0, Priority::Normal), Priority::Normal);
        assert_eq!(priority(77, Priority::High), Priority::High);
    }

    #[test]
    fn requests_are_checked_before_any_work() {
        let mut r = pb::SubmitProofRequest {
            proof_kind: 9,
            ..Default::default()
        };
        assert!(to_proof_request(&r)
            .unwrap_err()
            .0
            .contains("unknown proof_kind 9"));
        r.proof_kind = 0;
        assert!(to_proof_request(&r).unwrap_err().0.contains("UNSPECIFIED"));
        r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
        r.registered_proof = 5;
        r.vanilla_proof = b"{\"SectorNum\":1".to_vec();
        assert!(to_proof_request(&r)
            .unwrap_err()
            .0
            .contains("Curio's PoRep JSON"));
        r.vanilla_proof = br#"{"SectorNum":1,"Phase1Out":"!!","SectorSize":2048}"#.to_vec();
        assert!(to_proof_request(&r).unwrap_err().0.contains("base64"));
        r.vanilla_proof = br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":4096}"#.to_vec();
        assert!(to_proof_request(&r)
            .unwrap_err()
            .0
            .contains("SectorSize 4096"));
        r.vanilla_proof = br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":2048}"#.to_vec();
        r.sector_number = 2;
        assert!(to_proof_request(&r).unwrap_err().0.contains("SectorNum 1"));
        r.sector_number = 1;
        r.miner_id = 1000;
        let (req, reg) = to_proof_request(&r).unwrap();
        assert_eq!(reg, Registered::Seal(seal_from_abi(5).unwrap()));
        assert_eq!(
            req,
            ProofRequest::PoRep {
                c1_json: b"{}".to_vec(),
                prover_id: Some(prover_id_of_miner(1000)),
                sector_id: Some(1)
            }
        );
        r.registered_proof = 99;
        assert!(to_proof_request(&r)
            .unwrap_err()
            .0
            .contains("registered_proof"));

        let mut w = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WinningPost as i32,
            registered_proof: 10,
            vanilla_proofs: vec![vec![1]],
            randomness: vec![0; 32],
            ..Default::default()
        };
        assert!(to_proof_request(&w)
            .unwrap_err()
            .0
            .contains("not winning-post"));
        w.registered_proof = 0;
        w.randomness = vec![0; 31];
        assert!(to_proof_request(&w)
            .unwrap_err()
            .0
            .contains("randomness: 31 bytes"));
        w.vanilla_proofs.clear();
        assert!(to_proof_request(&w)
            .unwrap_err()
            .0
            .contains("vanilla_proofs is empty"));
        let s = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
            vanilla_proofs: vec![vec![1]],
            comm_r_old: vec![0; 32],
            comm_r_new: vec![0; 32],
            ..Default::default()
        };
        assert!(to_proof_request(&s)
            .unwrap_err()
            .0
            .contains("comm_d_new: 0 bytes"));
    }
}
