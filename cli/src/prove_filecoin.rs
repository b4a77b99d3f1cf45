//! `cuzk prove porep|snap|window-post|winning-post`: one Filecoin proof through the engine (the
//! path the daemon takes), its bytes written out, then checked by filecoin-proofs' verifier.

use std::path::PathBuf;
use std::time::Duration;

use cuzk_actors::daemon::settings::{BackendChoice, Settings};
use cuzk_actors::filecoin::FilecoinConfig;
use cuzk_actors::Engine;
use cuzk_filecoin::{params, verify};

use crate::common::Result;
use crate::filecoin_args::Kind;
use crate::progress::Progress;

pub struct Opts {
    pub out: Option<PathBuf>,
    pub backend: BackendChoice,
    pub params_dir: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub filecoin_verify: bool,
}

pub fn run(kind: &Kind, o: &Opts) -> Result<()> {
    let dir = params::dir(o.params_dir.as_deref());
    // filecoin-proofs reads its parameter cache (for the verifying key) from the environment.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    let req = kind.request()?;
    let parsed = req.parse()?;
    let registered = parsed.registered();
    let mut settings = Settings::load(o.config.as_deref())?;
    settings.engine.backend = o.backend;
    let (engine, devices) = Engine::from_settings(&settings, None)?;
    let cfg = FilecoinConfig {
        params_dir: Some(dir.clone()),
        ..Default::default()
    };
    let job = crate::progress::phase(
        &format!("loading the {registered} parameters and submitting"),
        || engine.submit_parsed(parsed.clone(), &cfg),
    )?;
    println!(
        "proof={registered} partitions={} params={} backend={devices}",
        job.partitions,
        job.params.display()
    );
    // A bar over the job's partitions (their count done, read from the engine's status).
    let bar = Progress::bar(job.partitions as u64, "partitions proved");
    let out = loop {
        if let Some(r) = job.handle.wait_timeout(Duration::from_millis(250)) {
            break r?;
        }
        let done = engine.status().ok().and_then(|s| {
            s.job_list
                .iter()
                .find(|j| j.id == job.handle.id)
                .map(|j| j.done)
        });
        if let Some(done) = done {
            bar.set_position(done as u64);
        }
    };
    drop(bar);
    let bytes = out.to_bytes();
    if let Some(path) = &o.out {
        std::fs::write(path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let verified = if o.filecoin_verify {
        match verify::verify(&parsed, &bytes) {
            Ok(true) => "true".to_string(),
            Ok(false) => {
                return Err(format!("filecoin-proofs rejected the {registered} proof").into())
            }
            Err(e) => format!("skipped ({e})"),
        }
    } else {
        "skipped".into()
    };
    println!(
        "proof_bytes={} self_verified={}/{} filecoin_verified={verified} wall_ms={} queue_ms={} prove_ms={}",
        bytes.len(),
        out.proofs.len(),
        out.proofs.len(),
        out.wall.as_millis(),
        out.queue.as_millis(),
        out.prove.as_millis()
    );
    engine.shutdown();
    Ok(())
}
