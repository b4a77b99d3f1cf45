//! `cuzk daemon` as an operator runs it (under systemd beside Curio), CPU backend: SIGTERM with a
//! proof in flight drains (the proof is answered, exit 0, no socket file left), job ids survive a
//! `kill -9` and a restart (an old id is NOT_FOUND naming the restart, never another job's
//! proof), a C-core-style client that sends the socket path as `:authority` is served on the
//! unix socket, and a refused start leaves no socket file.

mod common;

use common::daemon::{unix_client, Daemon};

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_actors::daemon::grpc::pb;
use cuzk_filecoin::request::prover_id_of_miner;
use tonic::Code;

/// The miner the fixture's sector is sealed for: the daemon runs verify_seal with its prover id,
/// as for Curio's requests, which always carry one.
const MINER: u64 = 1234;

/// Starts `cuzk daemon` (CPU backend) with its control socket and gRPC unix socket in `dir`,
/// its log in `dir/daemon.log`, and waits until it is ready.
fn start(dir: &Path, params: Option<&Path>, log: &str) -> Daemon {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    cmd.args(["daemon", "--socket"])
        .arg(dir.join("ctl.sock"))
        .arg("--grpc-socket")
        .arg(dir.join("grpc.sock"))
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .stderr(Stdio::from(std::fs::File::create(dir.join(log)).unwrap()));
    if let Some(p) = params {
        cmd.arg("--filecoin-params-dir").arg(p);
    }
    let d = Daemon(cmd.spawn().unwrap());
    let t = Instant::now();
    loop {
        let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["ctl", "--socket"])
            .arg(dir.join("ctl.sock"))
            .arg("ready")
            .output()
            .unwrap();
        if out.status.code() == Some(0) {
            return d;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "daemon did not become ready: {}",
            std::fs::read_to_string(dir.join(log)).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn porep(f: &common::Fixture, request_id: &str) -> pb::SubmitProofRequest {
    common::daemon::curio_porep(f, request_id, MINER)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits (at most `limit`) for the daemon to exit; its status.
fn exit_of(d: &mut Daemon, limit: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = d.0.try_wait().unwrap() {
            return st;
        }
        assert!(
            t.elapsed() < limit,
            "the daemon did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_daemon_given_sigterm_with_a_proof_in_flight_answers_it_exits_0_and_leaves_no_socket() {
    let f = common::fixture(Some(prover_id_of_miner(MINER)));
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = start(dir.path(), Some(&f.params), "daemon.log");
    let grpc = dir.path().join("grpc.sock");
    let rt = runtime();
    rt.block_on(async {
        let mut c = unix_client(grpc.clone()).await;
        let mut prover = c.clone();
        let req = porep(&f, "in-flight");
        let in_flight =
            tokio::spawn(async move { prover.prove(pb::ProveRequest { submit: Some(req) }).await });
        // Until the job is taken.
        let t = Instant::now();
        loop {
            let st = c
                .get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner();
            if st.queues.iter().any(|q| q.pending + q.in_progress == 1) {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the proof was never taken"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(
            unsafe { libc::kill(daemon.0.id() as i32, libc::SIGTERM) },
            0
        );
        // Draining: new work is refused, saying so; the proof in flight is answered.
        let t = Instant::now();
        loop {
            match c.submit_proof(porep(&f, "after-sigterm")).await {
                Err(s) if s.code() == Code::Unavailable => {
                    assert!(s.message().contains("draining"), "{s:?}");
                    break;
                }
                other => {
                    assert!(
                        t.elapsed() < Duration::from_secs(10),
                        "still taking work after SIGTERM: {other:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        let r = in_flight
            .await
            .unwrap()
            .expect("the Prove in flight is answered")
            .into_inner()
            .result
            .unwrap();
        assert_eq!(
            r.status,
            pb::await_proof_response::Status::Completed as i32,
            "{}",
            r.error_message
        );
        assert!(
            common::accepted(&f, &r.proof),
            "verify_seal rejected the drained proof"
        );
    });
    let st = exit_of(&mut daemon, Duration::from_secs(60));
    assert!(st.success(), "the daemon exited with {st}");
    assert!(!grpc.exists(), "gRPC socket left behind");
    assert!(
        !dir.path().join("ctl.sock").exists(),
        "control socket left behind"
    );
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap();
    let drains: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("SIGTERM: draining"))
        .collect();
    assert_eq!(drains.len(), 1, "{log}");
    assert!(drains[0].contains("INFO"), "{}", drains[0]);
}

#[test]
fn after_kill_9_and_a_restart_an_old_job_id_is_not_found_and_the_message_names_the_restart() {
    let f = common::fixture(Some(prover_id_of_miner(MINER)));
    let dir = tempfile::tempdir().unwrap();
    let grpc = dir.path().join("grpc.sock");
    let rt = runtime();
    let mut first = start(dir.path(), Some(&f.params), "first.log");
    let old = rt.block_on(async {
        let mut c = unix_client(grpc.clone()).await;
        c.submit_proof(porep(&f, "before"))
            .await
            .unwrap()
            .into_inner()
            .job_id
    });
    first.0.kill().unwrap(); // SIGKILL: no cleanup at all.
    first.0.wait().unwrap();
    let _second = start(dir.path(), Some(&f.params), "second.log");
    rt.block_on(async {
        let mut c = unix_client(grpc.clone()).await;
        // The first job of this run: the same engine number as the old one had (before ids
        // carried the run, the old id was answered with this job).
        let new = c
            .submit_proof(porep(&f, "after"))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        assert_ne!(new, old, "an id was issued twice across a restart");
        for call in 0..2 {
            let got = if call == 0 {
                c.await_proof(pb::AwaitProofRequest {
                    job_id: old.clone(),
                    timeout_ms: 0,
                })
                .await
                .map(|_| ())
            } else {
                c.cancel_proof(pb::CancelProofRequest {
                    job_id: old.clone(),
                })
                .await
                .map(|_| ())
            };
            let s = got.expect_err("an id from before the restart was answered");
            assert_eq!(s.code(), Code::NotFound, "{s:?}");
            assert!(
                s.message().contains(&old) && s.message().contains("restarted"),
                "{}",
                s.message()
            );
        }
        // One never issued: plain NOT_FOUND.
        let s = c
            .await_proof(pb::AwaitProofRequest {
                job_id: "12345".into(),
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::NotFound, "{s:?}");
        assert!(!s.message().contains("restarted"), "{}", s.message());
        assert!(
            c.cancel_proof(pb::CancelProofRequest { job_id: new })
                .await
                .unwrap()
                .into_inner()
                .was_running
        );
    });
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Reads one frame: (type, flags, stream, payload).
fn read_frame(s: &mut UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut h = [0u8; 9];
    s.read_exact(&mut h).unwrap();
    let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
    let mut p = vec![0; len];
    s.read_exact(&mut p).unwrap();
    (h[3], h[4], u32::from_be_bytes([h[5], h[6], h[7], h[8]]), p)
}

/// A gRPC GetStatus over raw HTTP/2 as C-core sends it, with the `:authority` given; answers the
/// response's `:status` and its `grpc-status`.
fn get_status_with_authority(
    s: &mut UnixStream,
    enc: &mut hpack::Encoder,
    dec: &mut hpack::Decoder,
    stream: u32,
    authority: &str,
) -> (String, String) {
    let headers: Vec<(&[u8], &[u8])> = vec![
        (b":path", b"/cuzk.v1.ProvingEngine/GetStatus"),
        (b":authority", authority.as_bytes()),
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
        (b"user-agent", b"grpc-c/58.0.0 (linux; chttp2)"),
    ];
    let mut out = Vec::new();
    frame(&mut out, 0x1, 0x4, stream, &enc.encode(headers));
    // An empty GetStatusRequest: uncompressed, length 0.
    frame(&mut out, 0x0, 0x1, stream, &[0, 0, 0, 0, 0]);
    s.write_all(&out).unwrap();
    let (mut status, mut grpc_status) = (String::new(), String::new());
    loop {
        let (kind, flags, id, p) = read_frame(s);
        match kind {
            0x4 if flags & 0x1 == 0 => {
                let mut ack = Vec::new();
                frame(&mut ack, 0x4, 0x1, 0, &[]);
                s.write_all(&ack).unwrap();
            }
            0x3 if id == stream => panic!(
                "the server reset the stream (RST_STREAM, error code {}) for :authority {authority}",
                u32::from_be_bytes([p[0], p[1], p[2], p[3]])
            ),
            0x7 => panic!("GOAWAY for :authority {authority}: {p:?}"),
            0x1 => {
                assert_eq!(flags & 0x4, 0x4, "headers in one frame");
                for (n, v) in dec.decode(&p).unwrap() {
                    match n.as_slice() {
                        b":status" => status = String::from_utf8(v).unwrap(),
                        b"grpc-status" => grpc_status = String::from_utf8(v).unwrap(),
                        _ => {}
                    }
                }
                if id == stream && flags & 0x1 != 0 {
                    return (status, grpc_status);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn a_grpc_client_that_sends_the_socket_path_as_authority_is_served_on_the_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let _daemon = start(dir.path(), None, "daemon.log");
    let grpc = dir.path().join("grpc.sock");
    let mut s = UnixStream::connect(&grpc).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    frame(&mut hello, 0x4, 0, 0, &[]);
    s.write_all(&hello).unwrap();
    let (mut enc, mut dec) = (hpack::Encoder::new(), hpack::Decoder::new());
    let path = grpc.display().to_string();
    // What grpcio 1.85 sends for `unix:<path>` (percent-encoded, no leading slash), the path
    // itself, the target as written, and (the same connection, its HPACK tables in use) again.
    let encoded = path.trim_start_matches('/').replace('/', "%2F");
    let unix = format!("unix:{path}");
    for (i, authority) in [
        encoded.as_str(),
        path.as_str(),
        unix.as_str(),
        path.as_str(),
        "localhost",
    ]
    .into_iter()
    .enumerate()
    {
        let (status, grpc_status) =
            get_status_with_authority(&mut s, &mut enc, &mut dec, 1 + 2 * i as u32, authority);
        assert_eq!(
            (status.as_str(), grpc_status.as_str()),
            ("200", "0"),
            ":authority {authority}"
        );
    }
}

#[test]
fn a_refused_start_leaves_no_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().to_string();
    let (ctl, grpc) = (dir.path().join("ctl.sock"), dir.path().join("grpc.sock"));
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--socket"])
        .arg(&ctl)
        .arg("--grpc-socket")
        .arg(&grpc)
        .args(["--grpc-listen", &port])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a daemon started on a busy port: {err}"
    );
    assert!(
        err.contains(&port),
        "the refusal does not name the port: {err}"
    );
    assert!(!grpc.exists(), "gRPC socket left behind by a refused start");
    assert!(
        !ctl.exists(),
        "control socket left behind by a refused start"
    );
    drop(busy);
}
