//! Serve your own circuit over cuzk's control socket: register a circuit kind (a function from a
//! request's input bytes to a job), start the socket on an engine, and prove it from a client,
//! here the same process; `cuzk ctl prove-custom --kind squares --input FILE` does the same from
//! a shell.
//!
//! Run: `cargo run --release -p cuzk-examples --bin embed-daemon`

use std::sync::Arc;
use std::time::Duration;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};
use cuzk_actors::daemon::control::server::{ControlServer, CustomKind, ServerOptions};
use cuzk_actors::daemon::jobs::JobTable;
use cuzk_actors::daemon::metrics::{Metrics, State};
use cuzk_actors::daemon::settings::Settings;
use cuzk_actors::{Engine, EngineError, JobSpec};

/// Knows `x` with `x² = y` for a public `y`, for each of its values.
#[derive(Clone)]
struct Squares(Vec<Option<u64>>);

impl Circuit<Scalar> for Squares {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (i, x) in self.0.into_iter().enumerate() {
            let x_val = x.map(Scalar::from);
            let x = cs.alloc(
                || format!("x{i}"),
                || x_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            let y = cs.alloc_input(
                || format!("y{i}"),
                || {
                    x_val
                        .map(|v| v * v)
                        .ok_or(SynthesisError::AssignmentMissing)
                },
            )?;
            cs.enforce(|| format!("x{i}^2"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: usize = 4;
    let params = std::env::temp_dir()
        .join("cuzk-example")
        .join("squares-4.params");
    if !params.exists() {
        std::fs::create_dir_all(params.parent().unwrap_or(&params))?;
        cuzk_srs::write_params(
            &params,
            &cuzk_engine::setup::generate(Squares(vec![None; N]), 1)?,
        )?;
    }
    let (engine, devices) = Engine::from_settings(&Settings::load(None)?, None)?;
    println!("devices: {devices}");
    let engine = Arc::new(engine);
    let srs = engine.load_srs(&params)?;

    // The kind: input = N little-endian u64 witnesses; anything else is refused by name.
    let squares: CustomKind = Arc::new(move |_, input: &[u8]| {
        if input.len() != 8 * N {
            return Err(EngineError::Rejected(format!(
                "input of {} bytes; expected {N} little-endian u64 values",
                input.len()
            )));
        }
        let xs = input
            .chunks_exact(8)
            .map(|c| c.try_into().map(u64::from_le_bytes).ok())
            .collect();
        Ok(JobSpec::new(srs.clone(), vec![Squares(xs)]))
    });
    let opts = ServerOptions {
        custom: vec![("squares".into(), squares)],
        ..Default::default()
    };
    opts.ready.set(State::Ready);
    let socket = std::env::temp_dir().join(format!("cuzk-example-{}.sock", std::process::id()));
    let jobs = JobTable::new(
        engine.clone(),
        Arc::new(Metrics::default()),
        Duration::from_secs(600),
    );
    let server = ControlServer::start(jobs, &socket, opts)?;

    // A client: submit, then wait for the proof bytes.
    let input: Vec<u8> = [3u64, 5, 7, 11]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let Response::Submitted { job } = call(
        &socket,
        &Request::ProveCustom {
            kind: "squares".into(),
            input,
        },
    )?
    else {
        return Err("the daemon refused the job".into());
    };
    match call(&socket, &Request::Wait { job: job.clone() })? {
        Response::Proof { proof, wall_ms, .. } => println!(
            "job {job}: {} proof bytes (self-verified) in {wall_ms} ms",
            proof.len()
        ),
        other => return Err(format!("job {job}: {other:?}").into()),
    }
    if let Response::Error(e) = call(
        &socket,
        &Request::ProveCustom {
            kind: "squares".into(),
            input: vec![1],
        },
    )? {
        println!("a bad input is answered: {e}");
    }
    drop(server);
    engine.shutdown();
    Ok(())
}
