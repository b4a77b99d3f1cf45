//! Embed the cuzk engine in a process, as a storage node does: start it over the devices the
//! machine has (a GPU if there is one, else the CPU), load parameters once through the engine,
//! submit multi-partition jobs with priorities, wait for one, cancel another, read the status.
//!
//! Run: `cargo run --release -p cuzk-examples --bin embed-engine`

use std::sync::Arc;
use std::time::Duration;

use cuzk_actors::daemon::settings::Settings;
use cuzk_actors::resources::tier::{Dims, Tier};
use cuzk_actors::{Engine, JobError, JobSpec, Priority};
use cuzk_engine::circuits::Bits;
use cuzk_engine::setup;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Parameters for this circuit shape: a local setup the first time, then the same file.
    let dir = std::env::temp_dir().join("cuzk-example");
    let params = dir.join("bits-8.params");
    if !params.exists() {
        std::fs::create_dir_all(&dir)?;
        cuzk_srs::write_params(&params, &setup::generate(Bits::random(8, 0), 1)?)?;
    }

    // The defaults of config/cuzk.toml, with CUZK_* environment overrides.
    // Devices: CUDA GPUs if usable, else the CPU; budgets from their free memory.
    let (engine, devices) = Engine::from_settings(&Settings::load(None)?, None)?;
    println!("devices: {devices}");

    // The SrsLoader opens each file once and shares it.
    let srs = engine.load_srs(&params)?;
    println!(
        "parameters: {}; a partition reserves {} bytes of device memory",
        params.display(),
        Dims::of(&srs).device(Tier::Full, false)
    );

    // Two jobs of 4 partitions each (every partition its own witness); the urgent one goes first.
    let partitions = |seed: u64| {
        (0..4)
            .map(|p| Bits::random(8, seed * 10 + p))
            .collect::<Vec<_>>()
    };
    let routine =
        engine.submit(JobSpec::new(Arc::clone(&srs), partitions(1)).priority(Priority::Low))?;
    let urgent =
        engine.submit(JobSpec::new(Arc::clone(&srs), partitions(2)).priority(Priority::High))?;
    let doomed = engine.submit(JobSpec::new(Arc::clone(&srs), partitions(3)))?;
    engine.cancel(doomed.id);

    let out = urgent.wait()?;
    println!(
        "job {} (high): {} bytes of proof, queue {:?}, prove {:?}",
        out.id,
        out.to_bytes().len(),
        out.queue,
        out.prove
    );
    let out = routine.wait()?;
    println!(
        "job {} (low):  {} bytes of proof, wall {:?}",
        out.id,
        out.to_bytes().len(),
        out.wall
    );
    match doomed.wait() {
        Err(JobError::Cancelled(id)) => println!("job {id}: cancelled"),
        other => println!("job {}: {:?}", doomed.id, other.map(|o| o.id)),
    }

    // Everything released once the engine is idle.
    std::thread::sleep(Duration::from_millis(50));
    let st = engine.status()?;
    println!(
        "status: {} live jobs, host reserved {} bytes, VRAM reserved {:?}",
        st.jobs,
        st.host.reserved,
        st.vram.iter().map(|v| v.reserved).collect::<Vec<_>>()
    );
    engine.shutdown();
    Ok(())
}
