//! What the daemon checks before and after proving, over gRPC as Curio calls it (2 KiB, CPU
//! backend): a SnapDeals request whose vanilla proofs are another sector's is refused up front
//! (`INVALID_ARGUMENT`, naming the vanilla proof), and the daemon goes on serving the next one; a
//! PoRep of another sector's C1 output, with the miner id and sector number, is FAILED by
//! `verify_seal`, and a good one is COMPLETED with `verified_by` naming it, both counted in
//! `cuzk_proofs_verified_total`.
//!
//! Parameters: cuzk's seeded local setup under the target directory (shared with the other
//! Filecoin tests), not Filecoin's production parameters.

mod common;

use common::daemon::{unix_client, Daemon};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_actors::daemon::grpc::pb;
use cuzk_filecoin::request::prover_id_of_miner;
use cuzk_filecoin::{params, sample, ProofRequest, Registered};

const MINER: u64 = 1234;

/// The request Curio's client builds for a PoRep C2 of `sealed`'s C1 output, for `sector_number`.
fn curio_porep(sealed: &sample::Sealed, sector_number: u64) -> pb::SubmitProofRequest {
    use base64::Engine as _;
    let wrapper = serde_json::json!({
        "SectorNum": sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&sealed.c1_json),
        "SectorSize": 2048,
    });
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5, // abi RegisteredSealProof_StackedDrg2KiBV1_1
        priority: pb::Priority::Normal as i32,
        vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
        sector_number,
        miner_id: MINER,
        ..Default::default()
    }
}

/// The value of the sample `name{labels}` in Prometheus text.
fn sample_value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .and_then(|s| match s.value {
            prometheus_parse::Value::Counter(v) => Some(v),
            _ => None,
        })
}

/// Curio's SnapDeals request: `vanilla`'s partition proofs with `commitments`' comm_r_old,
/// comm_r_new and comm_d_new.
fn curio_snap(vanilla: &ProofRequest, commitments: &ProofRequest) -> pb::SubmitProofRequest {
    let (
        ProofRequest::SnapDeals {
            registered,
            vanilla_proofs,
            ..
        },
        ProofRequest::SnapDeals {
            comm_r_old,
            comm_r_new,
            comm_d_new,
            ..
        },
    ) = (vanilla, commitments)
    else {
        panic!("SnapDeals requests expected")
    };
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: *registered,
        priority: pb::Priority::Normal as i32,
        vanilla_proofs: vanilla_proofs.clone(),
        comm_r_old: comm_r_old.to_vec(),
        comm_r_new: comm_r_new.to_vec(),
        comm_d_new: comm_d_new.to_vec(),
        miner_id: MINER,
        ..Default::default()
    }
}

#[test]
fn another_sectors_snapdeals_vanilla_proof_is_refused_up_front_and_its_porep_failed_by_verify_seal()
{
    let f = common::fixture(Some(prover_id_of_miner(MINER)));
    let dir = tempfile::tempdir().unwrap();
    let other = sample::seal(
        common::SEAL,
        &dir.path().join("other"),
        4,
        22,
        Some(prover_id_of_miner(MINER)),
    )
    .unwrap();
    let update = sample::update_proof_of(common::SEAL).unwrap();
    params::generate(
        Registered::Update(update),
        &f.params,
        params::DEV_SETUP_SEED,
    )
    .unwrap();
    let snap_a = sample::snap(&f.sector, &dir.path().join("snap-a"), 31).unwrap();
    let snap_b = sample::snap(&other, &dir.path().join("snap-b"), 32).unwrap();

    let (control, grpc_sock) = (dir.path().join("ctl.sock"), dir.path().join("grpc.sock"));
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--socket", control.to_str().unwrap()])
        .args(["--filecoin-params-dir", f.params.to_str().unwrap()])
        .args(["--grpc-socket", grpc_sock.to_str().unwrap()])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .env("FIL_PROOFS_PARENT_CACHE", &f.parents)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _daemon = Daemon(child);
    let start = Instant::now();
    while !grpc_sock.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no gRPC socket");
        std::thread::sleep(Duration::from_millis(50));
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = unix_client(grpc_sock.clone()).await;
        while c
            .get_status(pb::GetStatusRequest {})
            .await
            .map(|s| s.into_inner().state != "ready")
            .unwrap_or(true)
        {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "daemon did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // Sector b's vanilla proofs with sector a's commitments: refused before any job exists.
        let bad = c.submit_proof(curio_snap(&snap_b, &snap_a)).await;
        let s = bad.expect_err("another sector's vanilla proof was accepted");
        assert_eq!(s.code(), tonic::Code::InvalidArgument, "{s:?}");
        assert!(
            s.message().contains("SnapDeals vanilla partition proof 0")
                && s.message().contains("comm_r_old"),
            "{}",
            s.message()
        );
        let st = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (st.total_proofs_completed, st.total_proofs_failed),
            (0, 0),
            "a job was made of the refused request"
        );

        // The daemon goes on: sector a's own update proves, and filecoin-proofs accepts it.
        let r = c
            .prove(pb::ProveRequest {
                submit: Some(curio_snap(&snap_a, &snap_a)),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(
            r.status,
            pb::await_proof_response::Status::Completed as i32,
            "{}",
            r.error_message
        );
        let parsed = snap_a.parse().unwrap();
        assert!(
            cuzk_filecoin::verify::verify(&parsed, &r.proof).unwrap(),
            "verify_empty_sector_update_proof rejected the daemon's proof"
        );
        assert_eq!(r.verified_by, "verify_empty_sector_update_proof");

        // Sector a's C1 output as sector b's (its number, the same miner): cuzk proves it (the C1
        // output is consistent in itself), verify_seal rejects it for this sector: FAILED.
        let r = c
            .prove(pb::ProveRequest {
                submit: Some(curio_porep(&f.sector, other.sector_id)),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(
            r.status,
            pb::await_proof_response::Status::Failed as i32,
            "{r:?}"
        );
        assert!(
            r.error_message.contains("verify_seal rejected"),
            "{}",
            r.error_message
        );
        assert!(r.proof.is_empty());
        // Its own sector number: COMPLETED, verified by verify_seal.
        let r = c
            .prove(pb::ProveRequest {
                submit: Some(curio_porep(&f.sector, f.sector.sector_id)),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(
            r.status,
            pb::await_proof_response::Status::Completed as i32,
            "{}",
            r.error_message
        );
        assert_eq!(
            (r.proof.len(), r.verified_by.as_str()),
            (192, "verify_seal")
        );

        let text = c
            .get_metrics(pb::GetMetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .prometheus_text;
        let verified = |kind, result| {
            sample_value(
                &text,
                "cuzk_proofs_verified_total",
                &[("kind", kind), ("result", result)],
            )
        };
        assert_eq!(verified("porep", "invalid"), Some(1.0), "{text}");
        assert_eq!(verified("porep", "valid"), Some(1.0), "{text}");
        assert_eq!(verified("snap", "valid"), Some(1.0), "{text}");
    });
}
