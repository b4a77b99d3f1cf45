//! The control socket in process: an embedding program's own circuit kind registered with the
//! `ControlServer` and proved over the socket. (`cuzk daemon` and its socket end to end, as a
//! child process: cuzk-cli's `tests/control.rs`.)

use std::time::Duration;

use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};

fn error_mentions(r: Response, word: &str) {
    match r {
        Response::Error(e) => assert!(e.contains(word), "error `{e}` does not mention `{word}`"),
        other => panic!("expected an error about `{word}`, got {other:?}"),
    }
}

/// An embedding program's own circuit kind, registered with the server and proved over the socket
/// (`Request::ProveCustom`): its input bytes are the kind's to read, its errors are the answer.
#[test]
fn a_registered_circuit_kind_is_proved_over_the_socket() {
    use cuzk_actors::daemon::control::server::{ControlServer, CustomKind, ServerOptions};
    use cuzk_actors::daemon::jobs::JobTable;
    use cuzk_actors::daemon::metrics::{Metrics, State};
    use cuzk_actors::{Engine, EngineConfig, JobSpec};
    use cuzk_engine::circuits::Bits;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("bits-8.params");
    cuzk_srs::write_params(
        &params,
        &cuzk_engine::setup::generate(Bits::random(8, 0), 1).unwrap(),
    )
    .unwrap();
    let backend: Arc<dyn cuzk_engine::Pipeline> = Arc::new(cuzk_engine::CpuBackend::new());
    let engine = Arc::new(
        Engine::start(
            EngineConfig::default(),
            vec![backend],
            Box::new(cuzk_actors::resources::pinner::CountingPin::default()),
        )
        .unwrap(),
    );
    let srs = engine.load_srs(&params).unwrap();
    // Input: an 8-byte little-endian witness seed.
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
    let socket = dir.path().join("c.sock");
    let jobs = JobTable::new(
        engine.clone(),
        Arc::new(Metrics::default()),
        Duration::from_secs(60),
    );
    let server = ControlServer::start(jobs, &socket, opts).unwrap();

    let Response::Submitted { job } = call(
        &socket,
        &Request::ProveCustom {
            kind: "bits8".into(),
            input: 7u64.to_le_bytes().to_vec(),
        },
    )
    .unwrap() else {
        panic!("submit")
    };
    match call(&socket, &Request::Wait { job }).unwrap() {
        Response::Proof {
            proof, partitions, ..
        } => assert_eq!((proof.len(), partitions), (192, 1)),
        other => panic!("wait: {other:?}"),
    }
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
