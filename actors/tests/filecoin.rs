//! A real 2 KiB PoRep proof (a sector sealed here with filecoin-proofs) through the `Engine`:
//! filecoin-proofs' `verify_seal` accepts it, priorities follow the proof kind, and a missing
//! parameter file is named. (The same proof through the `cuzk prove porep` CLI and the daemon's
//! socket: cuzk-cli's `tests/filecoin.rs`.)
//!
//! Parameters: cuzk's seeded local setup under the target directory (shared with the
//! cuzk-filecoin tests), not Filecoin's production parameters.
#![cfg(feature = "filecoin")]

mod common;

use std::sync::OnceLock;

use common::{Fixture, SEAL};
use cuzk_actors::filecoin::{default_priority, FilecoinConfig};
use cuzk_actors::{Engine, EngineConfig, Priority};
use cuzk_engine::CpuBackend;
use cuzk_filecoin::{ProofKind, Registered};

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| common::fixture(None))
}

fn accepted(bytes: &[u8]) -> bool {
    common::accepted(fixture(), bytes)
}

#[test]
fn porep_through_the_engine_and_priorities_by_kind() {
    let f = fixture();
    let engine = Engine::start(
        EngineConfig::default(),
        vec![std::sync::Arc::new(CpuBackend::new())],
        Box::new(cuzk_actors::resources::pinner::CountingPin::default()),
    )
    .unwrap();
    let cfg = FilecoinConfig {
        params_dir: Some(f.params.clone()),
        ..Default::default()
    };
    // The first proof records the circuit; the second synthesizes its challenges in parallel
    // against that recording. Both are accepted, with different bytes (random r, s).
    let mut seen = Vec::new();
    for _ in 0..2 {
        let job = engine
            .submit_filecoin(f.sector.porep_request(), &cfg)
            .unwrap();
        assert_eq!(
            (job.registered, job.partitions),
            (Registered::Seal(SEAL), 1)
        );
        let out = job.handle.wait().unwrap();
        assert!(
            accepted(&out.to_bytes()),
            "verify_seal rejected the engine's proof"
        );
        seen.push(out.to_bytes());
    }
    assert_ne!(seen[0], seen[1]);

    assert_eq!(default_priority(ProofKind::WinningPoSt), Priority::High);
    assert!(default_priority(ProofKind::WinningPoSt) > default_priority(ProofKind::WindowPoSt));
    assert!(default_priority(ProofKind::WindowPoSt) > default_priority(ProofKind::PoRep));
    assert_eq!(
        default_priority(ProofKind::PoRep),
        default_priority(ProofKind::SnapDeals)
    );

    // A missing parameter file names itself and the directory, and the engine goes on.
    let empty = tempfile::tempdir().unwrap();
    let err = engine
        .submit_filecoin(
            f.sector.porep_request(),
            &FilecoinConfig {
                params_dir: Some(empty.path().into()),
                ..Default::default()
            },
        )
        .err()
        .unwrap();
    assert!(
        matches!(
            &err,
            cuzk_actors::EngineError::Filecoin(cuzk_filecoin::FilecoinError::MissingParams { .. })
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("v28-stacked-proof-of-replication")
            && err.contains(&empty.path().display().to_string()),
        "{err}"
    );
    engine.shutdown();
}
