//! A real 2 KiB PoRep proof (a sector sealed here with filecoin-proofs) through the
//! `cuzk prove porep` CLI and the daemon's socket (through the `Engine`: cuzk-actors'
//! `tests/filecoin.rs`): the same kind of bytes out of each, and filecoin-proofs' `verify_seal`
//! accepts them. Bad requests to the daemon are answered with errors and it goes on serving.
//!
//! Parameters: cuzk's seeded local setup under the target directory (shared with the
//! cuzk-filecoin tests), not Filecoin's production parameters.

mod common;

use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::Fixture;
use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};
use cuzk_filecoin::ProofRequest;

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| common::fixture(None))
}

fn accepted(bytes: &[u8]) -> bool {
    common::accepted(fixture(), bytes)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn porep_through_the_cli() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let c1 = dir.path().join("c1.json");
    std::fs::write(&c1, &f.sector.c1_json).unwrap();
    let out = dir.path().join("proof.bin");
    let run = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "prove",
            "porep",
            "--c1",
            c1.to_str().unwrap(),
            "--prover-id",
            &hex(&f.sector.prover_id),
            "--sector-id",
            &f.sector.sector_id.to_string(),
        ])
        .args([
            "--backend",
            "cpu",
            "--filecoin-params-dir",
            f.params.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("FIL_PROOFS_PARENT_CACHE", &f.parents)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("proof_bytes=192") && stdout.contains("filecoin_verified=true"),
        "{stdout}"
    );
    assert!(accepted(&std::fs::read(&out).unwrap()));

    // A malformed C1 file: a clear error, no proof.
    std::fs::write(&c1, b"{\"registered_proof\":").unwrap();
    let bad = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "prove",
            "porep",
            "--c1",
            c1.to_str().unwrap(),
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("malformed C1 output"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn error_mentions(r: Response, words: &[&str]) {
    match r {
        Response::Error(e) => assert!(
            words.iter().all(|w| e.contains(w)),
            "error `{e}` does not mention {words:?}"
        ),
        other => panic!("expected an error about {words:?}, got {other:?}"),
    }
}

#[test]
fn porep_through_the_daemon_and_bad_requests() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "daemon",
            "--socket",
            socket.to_str().unwrap(),
            "--filecoin-params-dir",
            f.params.to_str().unwrap(),
        ])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .env("FIL_PROOFS_PARENT_CACHE", &f.parents)
        .spawn()
        .unwrap();
    let _d = Daemon(child);
    let start = Instant::now();
    // The socket answers `starting` until the engine can prove; wait for `ready`.
    while !matches!(call(&socket, &Request::Ready), Ok(Response::Ok(ref s)) if s == "ready") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "daemon did not become ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Bad requests first; each is answered and the daemon serves the next.
    error_mentions(
        call(
            &socket,
            &Request::Prove(ProofRequest::PoRep {
                c1_json: b"[1,2".to_vec(),
                prover_id: None,
                sector_id: None,
            }),
        )
        .unwrap(),
        &["porep request", "malformed C1 output"],
    );
    let missing = ProofRequest::WinningPoSt {
        registered: 1,
        vanilla_proofs: vec![vec![1, 2, 3]],
        randomness: [0; 32],
        prover_id: [0; 32],
    };
    error_mentions(
        call(&socket, &Request::Prove(missing)).unwrap(),
        &["v28-proof-of-spacetime-fallback", "not found"],
    );
    let garbage = ProofRequest::WinningPoSt {
        registered: 0,
        vanilla_proofs: vec![vec![9; 40]],
        randomness: [0; 32],
        prover_id: [0; 32],
    };
    let r = call(&socket, &Request::Prove(garbage)).unwrap();
    // Parameters for 2 KiB WinningPoSt may or may not be there; either way the answer is an error.
    assert!(matches!(r, Response::Error(_)), "{r:?}");

    // The real proof: C1 bytes in, proof bytes out.
    let Response::Submitted { job } =
        call(&socket, &Request::Prove(f.sector.porep_request())).unwrap()
    else {
        panic!("submit")
    };
    match call(&socket, &Request::Wait { job: job.clone() }).unwrap() {
        Response::Proof {
            job: answered,
            proof,
            partitions,
            ..
        } => {
            assert_eq!((proof.len(), partitions), (192, 1));
            assert_eq!(answered, job, "the proof answered under another id");
            assert!(accepted(&proof), "verify_seal rejected the daemon's proof");
        }
        other => panic!("wait: {other:?}"),
    }
    assert!(matches!(
        call(&socket, &Request::Shutdown).unwrap(),
        Response::Ok(_)
    ));
}
