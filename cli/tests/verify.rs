//! `cuzk verify`: a 2 KiB PoRep proved by `cuzk prove` is checked by filecoin-proofs'
//! `verify_seal` from the same inputs (exit 0, a `valid` line); the same file with one byte
//! flipped, or checked as another sector's, is rejected (non-zero, the verifier named).
//!
//! Parameters: cuzk's seeded local setup under the target directory (shared with the other
//! Filecoin tests), not Filecoin's production parameters.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `cuzk <cmd> porep` of the fixture's sector (its C1 file, prover id and `sector_id`).
fn porep(cmd: &str, f: &common::Fixture, c1: &Path, sector_id: u64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    c.args([cmd, "porep", "--c1", c1.to_str().unwrap()])
        .args(["--prover-id", &hex(&f.sector.prover_id)])
        .args(["--sector-id", &sector_id.to_string()])
        .env("FIL_PROOFS_PARENT_CACHE", &f.parents);
    c
}

#[test]
fn a_proof_file_is_valid_until_one_byte_of_it_flips() {
    let f = common::fixture(None);
    let dir = tempfile::tempdir().unwrap();
    let c1 = dir.path().join("c1.json");
    std::fs::write(&c1, &f.sector.c1_json).unwrap();
    let proof = dir.path().join("proof.bin");
    let params = f.params.to_str().unwrap();
    let run = porep("prove", &f, &c1, f.sector.sector_id)
        .args(["--backend", "cpu", "--filecoin-params-dir", params])
        .args(["--out", proof.to_str().unwrap(), "--no-filecoin-verify"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));

    let ok = porep("verify", &f, &c1, f.sector.sector_id)
        .args([
            "--proof",
            proof.to_str().unwrap(),
            "--filecoin-params-dir",
            params,
        ])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(
        String::from_utf8_lossy(&ok.stdout).starts_with("valid: verify_seal accepts"),
        "{}",
        text(&ok)
    );

    // The same proof as another sector's: rejected.
    let other = porep("verify", &f, &c1, f.sector.sector_id + 1)
        .args([
            "--proof",
            proof.to_str().unwrap(),
            "--filecoin-params-dir",
            params,
        ])
        .output()
        .unwrap();
    assert!(!other.status.success(), "{}", text(&other));
    assert!(
        text(&other).contains("invalid: verify_seal"),
        "{}",
        text(&other)
    );

    // One byte flipped: rejected, the verifier named.
    let mut bytes = std::fs::read(&proof).unwrap();
    bytes[100] ^= 0x01;
    let flipped = dir.path().join("flipped.bin");
    std::fs::write(&flipped, &bytes).unwrap();
    let bad = porep("verify", &f, &c1, f.sector.sector_id)
        .args([
            "--proof",
            flipped.to_str().unwrap(),
            "--filecoin-params-dir",
            params,
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success(), "{}", text(&bad));
    assert!(
        text(&bad).contains("invalid: verify_seal"),
        "{}",
        text(&bad)
    );

    // No proof named: a clear error.
    let none = porep("verify", &f, &c1, f.sector.sector_id)
        .args(["--filecoin-params-dir", params])
        .output()
        .unwrap();
    assert!(!none.status.success());
    assert!(text(&none).contains("--proof FILE"), "{}", text(&none));
}
