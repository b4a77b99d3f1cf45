//! The daemon and its control socket, end to end: `cuzk daemon` as a child process (CPU backend),
//! requests through the client, malformed frames answered with errors while the engine goes on.
//! (A circuit kind registered by an embedder, in process: cuzk-actors' `tests/control.rs`.)

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{self, Request, Response};

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(socket: &Path, params: &Path) -> Daemon {
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "daemon",
            "--socket",
            socket.to_str().unwrap(),
            "--params-dir",
            params.to_str().unwrap(),
        ])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .spawn()
        .expect("start cuzk daemon");
    let start = Instant::now();
    // The socket answers `starting` until the engine can prove; wait for `ready`.
    while !matches!(call(socket, &Request::Ready), Ok(Response::Ok(ref s)) if s == "ready") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "daemon did not become ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Daemon(child)
}

fn raw(socket: &Path, bytes: &[u8]) -> Response {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(bytes).unwrap();
    proto::read(&mut s).unwrap().expect("a reply")
}

fn error_mentions(r: Response, word: &str) {
    match r {
        Response::Error(e) => assert!(e.contains(word), "error `{e}` does not mention `{word}`"),
        other => panic!("expected an error about `{word}`, got {other:?}"),
    }
}

#[test]
fn daemon_serves_control_requests_and_survives_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let mut daemon = start(&socket, &dir.path().join("params"));
    assert_eq!(
        std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777,
        0o600,
        "socket not 0600"
    );

    let Response::Json(status) = call(&socket, &Request::Status).unwrap() else {
        panic!("status")
    };
    assert!(
        status.contains("\"vram\"")
            && status.contains("pinned_bytes")
            && status.contains("job_list"),
        "{status}"
    );

    // Malformed input: garbage payload, wrong version, oversized length, truncated frame.
    let mut garbage = vec![0, 0, 0, 6, 0, proto::VERSION as u8];
    garbage.extend_from_slice(&[0xff; 4]);
    error_mentions(raw(&socket, &garbage), "malformed");
    error_mentions(raw(&socket, &[0, 0, 0, 3, 0, 99, 0]), "version");
    error_mentions(raw(&socket, &[0x7f, 0, 0, 0]), "limit");
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(&[0, 0, 0, 50, 0]).unwrap();
        drop(s); // hang up mid-frame
    }

    // The engine still serves: prove an example through the daemon.
    let Response::Submitted { job } = call(
        &socket,
        &Request::ProveExample {
            circuit: "bits".into(),
            size: 4,
            partitions: 2,
        },
    )
    .unwrap() else {
        panic!("submit")
    };
    // Ids are the daemon's `<run>-<n>`, as gRPC's.
    let (run, n) = job.split_once('-').expect("a job id `<run>-<n>`");
    assert!(
        run.len() == 8 && run.bytes().all(|b| b.is_ascii_hexdigit()) && n.parse::<u64>().is_ok(),
        "{job}"
    );
    match call(&socket, &Request::Wait { job: job.clone() }).unwrap() {
        Response::Proof {
            job: answered,
            proof,
            partitions,
            ..
        } => assert_eq!(
            (answered.as_str(), proof.len(), partitions),
            (job.as_str(), 384, 2)
        ),
        other => panic!("wait: {other:?}"),
    }
    error_mentions(
        call(
            &socket,
            &Request::ProveExample {
                circuit: "nope".into(),
                size: 1,
                partitions: 1,
            },
        )
        .unwrap(),
        "unknown circuit",
    );
    // Ended: not running. Never issued, a bare number, another run's: not found.
    error_mentions(
        call(&socket, &Request::Cancel { job: job.clone() }).unwrap(),
        "not running",
    );
    for id in [format!("{run}-999999"), "999".into()] {
        error_mentions(
            call(&socket, &Request::Cancel { job: id.clone() }).unwrap(),
            "not found",
        );
    }
    let other_prefix = if run == "00000000" {
        "00000001"
    } else {
        "00000000"
    };
    let other_run = format!("{other_prefix}-{n}");
    error_mentions(
        call(&socket, &Request::Cancel { job: other_run }).unwrap(),
        "restarted at",
    );
    error_mentions(
        call(
            &socket,
            &Request::Preload {
                path: "/nonexistent/x.params".into(),
            },
        )
        .unwrap(),
        "x.params",
    );
    assert!(matches!(
        call(&socket, &Request::Pause).unwrap(),
        Response::Ok(_)
    ));
    assert!(matches!(
        call(&socket, &Request::Resume).unwrap(),
        Response::Ok(_)
    ));
    let Response::Ok(m) = call(&socket, &Request::Metrics).unwrap() else {
        panic!("metrics")
    };
    assert!(
        m.contains("stage=\"synth\"")
            && m.contains("cuzk_proofs_completed_total{kind=\"example-bits\"} 1"),
        "{m}"
    );

    // One socket, one daemon.
    let second = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--socket", socket.to_str().unwrap()])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another daemon"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    // The ctl client prints what the daemon says.
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["ctl", "--socket", socket.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("\"host\""));
    // `ctl prove` prints the id it was given; `ctl wait` takes it back; an id of another run is
    // refused, naming the restart.
    let ctl = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["ctl", "--socket", socket.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let out = ctl(&[
        "prove",
        "--circuit",
        "bits",
        "--size",
        "4",
        "-p",
        "1",
        "--no-wait",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}");
    let id = stdout
        .trim()
        .strip_prefix("submitted job ")
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();
    assert!(id.starts_with(&format!("{run}-")), "{id}");
    let out = ctl(&["wait", &id]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("job {id} done: 192 proof bytes")),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ctl(&["wait", &format!("{other_prefix}-1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("not found") && stderr.contains("restarted at"),
        "{stderr}"
    );

    assert!(matches!(
        call(&socket, &Request::Shutdown).unwrap(),
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
            "daemon did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!socket.exists(), "socket file left behind");
    let mut buf = [0u8; 1];
    assert!(UnixStream::connect(&socket)
        .map(|mut s| s.read(&mut buf))
        .is_err());
}
