//! `cuzk daemon` as Curio sees it: the gRPC service `cuzk.v1.ProvingEngine` driven by the client
//! generated from our proto, over the unix socket (and TCP with a token), CPU backend, a real
//! 2 KiB PoRep C1 output in Curio's request shape (`{SectorNum, Phase1Out: base64, SectorSize}`,
//! `registered_proof` the Go abi number, `miner_id`), the proof checked by filecoin-proofs'
//! `verify_seal`. Also: a client that hangs up mid-wait keeps its job, request ids are
//! deduplicated, cancel, evict refused while held, preload / evict, status, Prometheus text
//! (gRPC, control socket and HTTP, parsed), malformed requests and unknown kinds, a wrong token,
//! JSON log lines with the job fields, `ctl ready`, `reload`, `drain`; a starting daemon, and a
//! request over the size limit.

mod common;

use common::daemon::{free_port, unix_client, Daemon};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};
use cuzk_actors::daemon::grpc::pb;
use cuzk_actors::daemon::grpc::pb::proving_engine_client::ProvingEngineClient;
use cuzk_filecoin::request::prover_id_of_miner;
use tonic::transport::Channel;
use tonic::Code;

const MINER: u64 = 1234;
const TOKEN: &str = "s3cret-token";

fn curio_porep(f: &common::Fixture, request_id: &str) -> pb::SubmitProofRequest {
    common::daemon::curio_porep(f, request_id, MINER)
}

fn code_and_message<T: std::fmt::Debug>(
    r: Result<tonic::Response<T>, tonic::Status>,
    code: Code,
    words: &[&str],
) {
    match r {
        Err(s) => {
            assert_eq!(s.code(), code, "{s:?}");
            assert!(
                words.iter().all(|w| s.message().contains(w)),
                "`{}` does not mention {words:?}",
                s.message()
            );
        }
        Ok(r) => panic!("expected {code:?} about {words:?}, got {r:?}"),
    }
}

/// Parses Prometheus text and returns the value of `name` with `labels` (all of them matching).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text parses");
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(ref h) => {
                h.iter().map(|b| b.count).fold(0.0, f64::max)
            }
            prometheus_parse::Value::Summary(_) => f64::NAN,
        })
}

fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

fn ctl(socket: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["ctl", "--socket", socket.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn curio_drives_the_daemon_over_grpc() {
    let f = common::fixture(Some(prover_id_of_miner(MINER)));
    let dir = tempfile::tempdir().unwrap();
    let (control, grpc_sock, log_path) = (
        dir.path().join("ctl.sock"),
        dir.path().join("grpc.sock"),
        dir.path().join("daemon.log"),
    );
    let (tcp, http) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "daemon",
            "--socket",
            control.to_str().unwrap(),
            "--filecoin-params-dir",
            f.params.to_str().unwrap(),
        ])
        .args([
            "--grpc-socket",
            grpc_sock.to_str().unwrap(),
            "--grpc-listen",
            &tcp,
            "--metrics-listen",
            &http,
        ])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .env("CUZK_LOG__FORMAT", "json")
        .env("CUZK_GRPC__TOKEN", TOKEN)
        .env("FIL_PROOFS_PARENT_CACHE", &f.parents)
        .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()))
        .spawn()
        .unwrap();
    let mut daemon = Daemon(child);
    let start = Instant::now();
    loop {
        let out = ctl(&control, &["ready"]);
        if out.status.code() == Some(0) {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ready");
            break;
        }
        assert!(
            matches!(out.status.code(), Some(1 | 2)),
            "starting is exit 1, no daemon yet exit 2: {out:?}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "daemon did not become ready"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = unix_client(grpc_sock.clone()).await;

        // Status of a fresh daemon: one device (the CPU), unlimited budgets reported as 0.
        let st = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(st.state, "ready");
        assert_eq!((st.gpus.len(), st.gpus[0].name.as_str(), st.gpus[0].vram_total_bytes), (1, "cpu", 0));
        assert!(st.budgets.iter().any(|b| b.name == "host" && b.capacity_bytes == 0), "{:?}", st.budgets);
        assert!(st.loaded_srs.is_empty() && st.queues.is_empty());

        // Bad requests, each answered by name; the daemon goes on.
        let mut bad = curio_porep(&f, "");
        bad.vanilla_proof = b"not json".to_vec();
        code_and_message(c.submit_proof(bad).await, Code::InvalidArgument, &["vanilla_proof", "Curio's PoRep JSON"]);
        let mut bad = curio_porep(&f, "");
        bad.proof_kind = 7;
        code_and_message(c.submit_proof(bad).await, Code::InvalidArgument, &["unknown proof_kind 7"]);
        let mut bad = curio_porep(&f, "");
        bad.registered_proof = 6; // 8 MiB
        bad.sector_size = 0;
        bad.vanilla_proof = serde_json::to_vec(&serde_json::json!({"SectorNum": 3, "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&f.sector.c1_json), "SectorSize": 0})).unwrap();
        code_and_message(c.submit_proof(bad).await, Code::InvalidArgument, &["registered_proof 6", "C1 output is for"]);
        let mut bad = curio_porep(&f, "");
        bad.vanilla_proof = serde_json::to_vec(&serde_json::json!({"SectorNum": 3, "Phase1Out": base64::engine::general_purpose::STANDARD.encode(b"{\"registered_proof\":"), "SectorSize": 2048})).unwrap();
        code_and_message(c.submit_proof(bad).await, Code::InvalidArgument, &["malformed C1 output"]);
        code_and_message(c.prove(pb::ProveRequest { submit: None }).await, Code::InvalidArgument, &["submit is missing"]);
        code_and_message(c.await_proof(pb::AwaitProofRequest { job_id: "x1".into(), timeout_ms: 0 }).await, Code::InvalidArgument, &["x1"]);
        code_and_message(c.await_proof(pb::AwaitProofRequest { job_id: "999".into(), timeout_ms: 0 }).await, Code::NotFound, &["999"]);
        code_and_message(c.cancel_proof(pb::CancelProofRequest { job_id: "999".into() }).await, Code::NotFound, &["999"]);
        code_and_message(c.preload_srs(pb::PreloadSrsRequest { circuit_id: "porep-3g".into() }).await, Code::InvalidArgument, &["unknown size"]);
        code_and_message(c.preload_srs(pb::PreloadSrsRequest { circuit_id: "winning-64g".into() }).await, Code::NotFound, &["winning-64g", "not found"]);

        // Preload, twice.
        let p = c.preload_srs(pb::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
        assert!(!p.already_loaded);
        assert!(c.preload_srs(pb::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner().already_loaded);
        let st = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(st.loaded_srs.len(), 1);
        assert_eq!((st.loaded_srs[0].circuit_id.as_str(), st.loaded_srs[0].tier, st.loaded_srs[0].ref_count), ("porep-2k", pb::srs_status::Tier::Warm as i32, 0));
        assert!(st.loaded_srs[0].size_bytes > 100 << 20, "{:?}", st.loaded_srs[0]);

        // Curio's Prove; this client gives up after 1 s (its deadline), the job goes on.
        let mut first = tonic::Request::new(pb::ProveRequest { submit: Some(curio_porep(&f, "porep-a")) });
        first.set_timeout(Duration::from_secs(1));
        // (tonic's server answers an expired grpc-timeout with CANCELLED "Timeout expired".)
        match c.prove(first).await {
            Err(s) => assert!(matches!(s.code(), Code::DeadlineExceeded | Code::Cancelled), "{s:?}"),
            Ok(r) => panic!("a 1 s Prove of a CPU PoRep returned {r:?}"),
        }
        // The same request id again: the same job, now awaited to its end.
        let r = c.prove(pb::ProveRequest { submit: Some(curio_porep(&f, "porep-a")) }).await.unwrap().into_inner().result.unwrap();
        assert_eq!(r.status, pb::await_proof_response::Status::Completed as i32, "{}", r.error_message);
        assert_eq!(r.proof.len(), 192);
        assert!(common::accepted(&f, &r.proof), "verify_seal rejected the gRPC proof");
        assert!(r.synthesis_ms > 0 && r.total_ms >= r.synthesis_ms && r.total_ms > 1000, "{r:?}");
        // Submit + await of the same request id: that job, kept after it ended.
        let s = c.submit_proof(curio_porep(&f, "porep-a")).await.unwrap().into_inner();
        assert_eq!(s.job_id, r.job_id);
        let again = c.await_proof(pb::AwaitProofRequest { job_id: s.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(again.proof, r.proof);

        // A second job: evict refused while it holds the parameters; cancelled; everything released.
        // Submitted twice at once under one request id: one job.
        let (mut c2, mut c3) = (c.clone(), c.clone());
        let (s, s2) = tokio::join!(c2.submit_proof(curio_porep(&f, "porep-b")), c3.submit_proof(curio_porep(&f, "porep-b")));
        let (s, s2) = (s.unwrap().into_inner(), s2.unwrap().into_inner());
        assert_eq!(s.job_id, s2.job_id, "two jobs for one request id");
        assert_ne!(s.job_id, r.job_id);
        code_and_message(c.evict_srs(pb::EvictSrsRequest { circuit_id: "porep-2k".into() }).await, Code::FailedPrecondition, &["porep-2k", "in use"]);
        let t = c.await_proof(pb::AwaitProofRequest { job_id: s.job_id.clone(), timeout_ms: 100 }).await.unwrap().into_inner();
        assert_eq!(t.status, pb::await_proof_response::Status::Timeout as i32);
        let st = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
        assert!(st.queues.iter().any(|q| q.proof_kind == "porep" && q.pending + q.in_progress == 1), "{:?}", st.queues);
        assert!(c.cancel_proof(pb::CancelProofRequest { job_id: s.job_id.clone() }).await.unwrap().into_inner().was_running);
        let t = c.await_proof(pb::AwaitProofRequest { job_id: s.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(t.status, pb::await_proof_response::Status::Cancelled as i32);
        assert!(t.error_message.contains("cancelled"), "{}", t.error_message);
        assert!(!c.cancel_proof(pb::CancelProofRequest { job_id: s.job_id.clone() }).await.unwrap().into_inner().was_running);
        let start = Instant::now();
        loop {
            let st = c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner();
            if st.budgets.iter().all(|b| b.reserved_bytes == 0) && st.loaded_srs.iter().all(|s| s.ref_count == 0) {
                assert_eq!((st.total_proofs_completed, st.total_proofs_failed), (1, 0));
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "the cancelled job still holds {:?} / {:?}", st.budgets, st.loaded_srs);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let e = c.evict_srs(pb::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
        assert!(e.was_loaded && e.freed_bytes > 100 << 20, "{e:?}");
        assert!(!c.evict_srs(pb::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner().was_loaded);
        assert!(c.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner().loaded_srs.is_empty());

        // Metrics: Prometheus text whose counters moved with the jobs.
        let text = c.get_metrics(pb::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
        assert_eq!(sample(&text, "cuzk_proofs_completed_total", &[("kind", "porep")]), Some(1.0), "{text}");
        assert_eq!(sample(&text, "cuzk_proofs_cancelled_total", &[("kind", "porep")]), Some(1.0));
        assert_eq!(sample(&text, "cuzk_proofs_submitted_total", &[("kind", "porep")]), Some(2.0));
        assert!(sample(&text, "cuzk_stage_seconds_count", &[("stage", "synth")]).unwrap() >= 1.0, "{text}");
        assert!(sample(&text, "cuzk_stage_seconds_count", &[("stage", "compute")]).unwrap() >= 1.0);
        assert_eq!(sample(&text, "cuzk_budget_reserved_bytes", &[("budget", "host")]), Some(0.0));
        assert_eq!(sample(&text, "cuzk_srs_loaded", &[]), Some(0.0));
        assert_eq!(sample(&text, "cuzk_ready", &[("state", "ready")]), Some(1.0));
        assert!(sample(&text, "cuzk_gpu_busy_fraction", &[("gpu", "0")]).is_some());

        // TCP: the token is required.
        let tcp_channel = Channel::from_shared(format!("http://{tcp}")).unwrap().connect().await.unwrap();
        let mut anon = ProvingEngineClient::new(tcp_channel.clone());
        code_and_message(anon.get_status(pb::GetStatusRequest {}).await, Code::Unauthenticated, &["authorization"]);
        let mut wrong = ProvingEngineClient::with_interceptor(tcp_channel.clone(), |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", "Bearer nope".parse().unwrap());
            Ok(r)
        });
        code_and_message(wrong.get_status(pb::GetStatusRequest {}).await, Code::Unauthenticated, &["wrong token"]);
        let mut ok = ProvingEngineClient::with_interceptor(tcp_channel, |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            Ok(r)
        });
        assert_eq!(ok.get_status(pb::GetStatusRequest {}).await.unwrap().into_inner().total_proofs_completed, 1);
    });

    // The same text over HTTP and the control socket.
    let (status, body) = http_get(&http, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(
        sample(&body, "cuzk_proofs_completed_total", &[("kind", "porep")]),
        Some(1.0)
    );
    assert!(http_get(&http, "/nope").0.contains("404"));
    let Response::Ok(text) = call(&control, &Request::Metrics).unwrap() else {
        panic!("metrics")
    };
    assert_eq!(
        sample(&text, "cuzk_proofs_cancelled_total", &[("kind", "porep")]),
        Some(1.0)
    );

    // Reload: live keys applied, the others refused by name.
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[jobs]\nretain_s = 7\n[engine]\nbackend = \"cpu\"\n").unwrap();
    // The daemon's own settings came from the environment (backend cpu); this file says the same.
    let r = call(
        &control,
        &Request::Reload {
            path: Some(cfg.display().to_string()),
        },
    )
    .unwrap();
    let Response::Ok(applied) = r else {
        panic!("reload: {r:?}")
    };
    assert!(applied.contains("jobs.retain_s"), "{applied}");
    std::fs::write(&cfg, "[engine]\nbackend = \"cpu\"\nsynth_threads = 1\n").unwrap();
    match call(
        &control,
        &Request::Reload {
            path: Some(cfg.display().to_string()),
        },
    )
    .unwrap()
    {
        Response::Error(e) => assert!(
            e.contains("engine.synth_threads") && e.contains("restart"),
            "{e}"
        ),
        other => panic!("reload with a fixed key: {other:?}"),
    }

    // JSON logs: every line one JSON object; job lines carry the job fields.
    let log = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let done = lines
        .iter()
        .find(|v| v["msg"] == "job completed")
        .unwrap_or_else(|| panic!("no job line in {log}"));
    assert_eq!(done["kind"], "porep");
    assert!(
        done["job"].is_u64()
            && done.get("partition").is_some()
            && done.get("gpu").is_some()
            && done["level"] == "INFO",
        "{done}"
    );
    assert!(lines
        .iter()
        .any(|v| v["msg"] == "ready" && v["startup_ms"].is_u64()));

    // Drain: refuses new work, finishes, exits.
    assert!(matches!(
        call(&control, &Request::Drain).unwrap(),
        Response::Ok(_)
    ));
    let start = Instant::now();
    loop {
        if let Some(st) = daemon.0.try_wait().unwrap() {
            assert!(st.success(), "daemon exited with {st}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "daemon did not stop after drain"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!grpc_sock.exists(), "gRPC socket left behind");
    assert_eq!(ctl(&control, &["ready"]).status.code(), Some(2));
}

/// Before the engine can prove, both interfaces say `starting`: status and readiness answer, work
/// is refused with UNAVAILABLE / an error naming the state.
#[test]
fn a_starting_daemon_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (control, grpc_sock) = (dir.path().join("ctl.sock"), dir.path().join("grpc.sock"));
    let ready = cuzk_actors::daemon::metrics::Readiness::default();
    let opts = cuzk_actors::daemon::control::server::ServerOptions {
        ready: ready.clone(),
        ..Default::default()
    };
    let server = cuzk_actors::daemon::control::server::ControlServer::bind(&control, opts).unwrap();
    assert_eq!(
        call(&control, &Request::Ready).unwrap(),
        Response::Ok("starting".into())
    );
    let out = ctl(&control, &["ready"]);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        (Some(1), "starting")
    );
    let Response::Json(st) = call(&control, &Request::Status).unwrap() else {
        panic!("status")
    };
    assert!(st.contains("\"state\":\"starting\""), "{st}");
    match call(&control, &Request::Cancel { job: "1".into() }).unwrap() {
        Response::Error(e) => assert!(e.contains("starting"), "{e}"),
        other => panic!("{other:?}"),
    }

    let gopts = cuzk_actors::daemon::grpc::GrpcOptions {
        unix_socket: Some(grpc_sock.clone()),
        tcp_listen: None,
        token: None,
        allow_remote: false,
        max_message_bytes: 1 << 20,
        cancel_on_disconnect: Default::default(),
        filecoin: Default::default(),
    };
    let mut g = cuzk_actors::daemon::grpc::GrpcServer::start(
        cuzk_actors::daemon::grpc::Service::new(gopts.clone(), ready),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = unix_client(grpc_sock.clone()).await;
        assert_eq!(
            c.get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner()
                .state,
            "starting"
        );
        code_and_message(
            c.submit_proof(pb::SubmitProofRequest::default()).await,
            Code::Unavailable,
            &["starting"],
        );
        code_and_message(
            c.get_metrics(pb::GetMetricsRequest {}).await,
            Code::Unavailable,
            &["starting"],
        );
        // Larger than grpc.max_message_mib (1 MiB here): refused by size, the server goes on.
        let big = pb::SubmitProofRequest {
            vanilla_proof: vec![7; 2 << 20],
            ..Default::default()
        };
        match c.submit_proof(big).await {
            Err(s) => assert!(s.message().contains("too large"), "{s:?}"),
            Ok(r) => panic!("a 2 MiB request passed a 1 MiB limit: {r:?}"),
        }
        assert_eq!(
            c.get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner()
                .state,
            "starting"
        );
    });
    g.stop();
    assert!(!grpc_sock.exists());
    // A non-loopback TCP address without a token is refused at start, naming the way out.
    let remote = cuzk_actors::daemon::grpc::GrpcOptions {
        unix_socket: None,
        tcp_listen: Some("0.0.0.0:0".into()),
        ..gopts
    };
    let err = cuzk_actors::daemon::grpc::GrpcServer::start(
        cuzk_actors::daemon::grpc::Service::new(remote, Default::default()),
    )
    .err()
    .unwrap();
    assert!(
        matches!(&err, cuzk_actors::EngineError::Config { key, .. } if key == "grpc.tcp_listen"),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("not a loopback address") && err.contains("grpc.token"),
        "{err}"
    );
    drop(server);
}
