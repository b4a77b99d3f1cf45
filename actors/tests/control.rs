//! The control socket in process: an embedding program's own circuit kind registered with the
//! `ControlServer` and proved over the socket. (`cuzk daemon` and its socket end to end, as a
//! child process: cuzk-cli's `tests/control.rs`.) Job ids over the socket are the daemon's
//! `<run>-<n>`: one from before a restart is not found, and the answer names the restart.

use std::time::Duration;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};
use cuzk_actors::daemon::control::server::{ControlServer, CustomKind, ServerOptions};
use cuzk_actors::daemon::jobs::JobTable;
use cuzk_actors::daemon::metrics::{Metrics, State};
use cuzk_actors::{Engine, EngineConfig, JobSpec};
use cuzk_engine::circuits::Bits;

fn error_mentions(r: Response, word: &str) {
    match r {
        Response::Error(e) => assert!(e.contains(word), "error `{e}` does not mention `{word}`"),
        other => panic!("expected an error about `{word}`, got {other:?}"),
    }
}

/// A daemon in process: a CPU engine, its job table (a run of its own: ids `<run>-<n>`), and a
/// `ControlServer` on `socket` that registers `bits8` (an 8-bit circuit; input: an 8-byte
/// little-endian witness seed) with the parameters at `params`.
fn daemon(
    params: &Path,
    socket: &Path,
) -> (
    Arc<Engine>,
    cuzk_actors::daemon::control::server::ControlServer,
) {
    let backend: Arc<dyn cuzk_engine::Pipeline> = Arc::new(cuzk_engine::CpuBackend::new());
    let engine = Arc::new(
        Engine::start(
            EngineConfig::default(),
            vec![backend],
            Box::new(cuzk_actors::resources::pinner::CountingPin::default()),
        )
        .unwrap(),
    );
    let srs = engine.load_srs(params).unwrap();
    let bits: CustomKind = Arc::new(move |_, input: &[u8]| {
        let seed = <[u8; 8]>::try_from(input).map_err(|_| {
            cuzk_actors::EngineError::Rejected(format!(
                "input of {} bytes; expected an 8-byte seed",
                input.len()
            ))
        })?;
        Ok(JobSpec::new(
            srs.clone(),
            vec![Bits::random(8, u64::from_le_bytes(seed))],
        ))
    });
    let opts = ServerOptions {
        custom: vec![("bits8".into(), bits)],
        ..Default::default()
    };
    opts.ready.set(State::Ready);
    let jobs = JobTable::new(
        engine.clone(),
        Arc::new(Metrics::default()),
        Duration::from_secs(60),
    );
    let server = ControlServer::start(jobs, socket, opts).unwrap();
    (engine, server)
}

/// Writes the parameters of the `bits8` kind to `dir`.
fn bits8_params(dir: &Path) -> PathBuf {
    let params = dir.join("bits-8.params");
    cuzk_srs::write_params(
        &params,
        &cuzk_engine::setup::generate(Bits::random(8, 0), 1).unwrap(),
    )
    .unwrap();
    params
}

/// Submits a `bits8` job with witness seed `seed`; its id.
fn submit(socket: &Path, seed: u64) -> String {
    match call(
        socket,
        &Request::ProveCustom {
            kind: "bits8".into(),
            input: seed.to_le_bytes().to_vec(),
        },
    )
    .unwrap()
    {
        Response::Submitted { job } => job,
        other => panic!("submit: {other:?}"),
    }
}

/// Waits for job `job`, which must end with one proof answered under its own id.
fn proof_of(socket: &Path, job: &str) {
    match call(socket, &Request::Wait { job: job.into() }).unwrap() {
        Response::Proof {
            job: answered,
            proof,
            partitions,
            ..
        } => assert_eq!((answered.as_str(), proof.len(), partitions), (job, 192, 1)),
        other => panic!("wait {job}: {other:?}"),
    }
}

/// An embedding program's own circuit kind, registered with the server and proved over the socket
/// (`Request::ProveCustom`): its input bytes are the kind's to read, its errors are the answer.
#[test]
fn a_registered_circuit_kind_is_proved_over_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let params = bits8_params(dir.path());
    let socket = dir.path().join("c.sock");
    let (engine, server) = daemon(&params, &socket);

    let job = submit(&socket, 7);
    proof_of(&socket, &job);
    error_mentions(
        call(
            &socket,
            &Request::ProveCustom {
                kind: "bits8".into(),
                input: vec![1, 2],
            },
        )
        .unwrap(),
        "8-byte seed",
    );
    error_mentions(
        call(
            &socket,
            &Request::ProveCustom {
                kind: "sha".into(),
                input: vec![],
            },
        )
        .unwrap(),
        "registers bits8",
    );
    let Response::Ok(m) = call(&socket, &Request::Metrics).unwrap() else {
        panic!("metrics")
    };
    assert!(
        m.contains("cuzk_proofs_completed_total{kind=\"bits8\"} 1"),
        "{m}"
    );
    drop(server);
    engine.shutdown();
}

/// A restart (a new job table, a new engine whose numbers start over, on the same socket): the id
/// of a job of the earlier run is never another job's. `Wait` and `Cancel` of it are answered
/// "not found", naming the restart; an id of this run that no job has is "not found" without one.
#[test]
fn a_control_socket_id_from_an_earlier_run_is_not_found_and_names_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let params = bits8_params(dir.path());
    let socket = dir.path().join("c.sock");

    let (engine, server) = daemon(&params, &socket);
    let old = submit(&socket, 7);
    let (run, n) = old.split_once('-').expect("an id `<run>-<n>`");
    assert!(
        run.len() == 8 && run.bytes().all(|b| b.is_ascii_hexdigit()) && n.parse::<u64>().is_ok(),
        "{old}"
    );
    proof_of(&socket, &old);
    drop(server);
    engine.shutdown();

    let (engine, server) = daemon(&params, &socket);
    let new = submit(&socket, 8);
    assert_ne!(
        new, old,
        "the restarted daemon reissued an earlier run's id"
    );
    for req in [
        Request::Wait { job: old.clone() },
        Request::Cancel { job: old.clone() },
    ] {
        match call(&socket, &req).unwrap() {
            Response::Error(e) => assert!(
                e.contains("not found")
                    && e.contains(&old)
                    && e.contains("earlier run")
                    && e.contains("restarted at"),
                "{req:?}: {e}"
            ),
            other => panic!("{req:?} of an earlier run's id: {other:?}"),
        }
    }
    proof_of(&socket, &new);

    // Never issued in this run, or a bare engine number: not found, no restart named.
    let this_run = new.split_once('-').unwrap().0;
    for id in [format!("{this_run}-999999"), "1".to_string()] {
        match call(&socket, &Request::Wait { job: id.clone() }).unwrap() {
            Response::Error(e) => assert!(
                e.contains("not found") && e.contains(&id) && !e.contains("restart"),
                "{id}: {e}"
            ),
            other => panic!("wait {id}: {other:?}"),
        }
    }
    error_mentions(
        call(
            &socket,
            &Request::Cancel {
                job: "no-such".into(),
            },
        )
        .unwrap(),
        "not a job id",
    );
    drop(server);
    engine.shutdown();
}
