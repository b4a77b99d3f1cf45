//! The Filecoin fixture the actors tests share: parameters from cuzk's seeded dev setup under
//! `$CARGO_TARGET_TMPDIR/filecoin-params` (generated once for every test binary, and shared with
//! the cuzk-filecoin tests), and a 2 KiB sector sealed on the CPU; `engine.rs`: an engine on a
//! CPU backend and waiting on its status.
#![allow(dead_code)]

pub mod engine;

use std::path::{Path, PathBuf};

use cuzk_filecoin::sample::{self, Sealed};
use cuzk_filecoin::{params, Registered};
use filecoin_proofs_api::RegisteredSealProof;

pub const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

pub struct Fixture {
    pub params: PathBuf,
    pub parents: PathBuf,
    _dir: tempfile::TempDir,
    pub sector: Sealed,
}

/// Parameters for the 2 KiB PoRep and a sector (number 3, seed 21) sealed for `prover_id`
/// (`None`: one drawn from the seed).
pub fn fixture(prover_id: Option<[u8; 32]>) -> Fixture {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let params = tmp.join("filecoin-params");
    let parents = tmp.join("filecoin-parents");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    params::generate(Registered::Seal(SEAL), &params, params::DEV_SETUP_SEED).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sector = sample::seal(SEAL, &dir.path().join("s"), 3, 21, prover_id).unwrap();
    Fixture {
        params,
        parents,
        _dir: dir,
        sector,
    }
}

/// Whether filecoin-proofs' verifier accepts `bytes` as the proof of `f`'s sector.
pub fn accepted(f: &Fixture, bytes: &[u8]) -> bool {
    let parsed = f.sector.porep_request().parse().unwrap();
    cuzk_filecoin::verify::verify(&parsed, bytes).unwrap()
}
