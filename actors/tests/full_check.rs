//! The recording's periodic full check in the pipeline: the dispatcher decides which partition it
//! falls on when it admits it (`Synthesis::Checked`), reserves the second recording that the
//! check makes beside the witness, and the partition then goes on witness-only. Its own test
//! binary: it sets the process-wide recording options.

mod common;

use std::sync::Arc;

use blstrs::Scalar;
use common::engine::wait_until;
use cuzk_actors::resources::pinner::CountingPin;
use cuzk_actors::resources::tier::Dims;
use cuzk_actors::{Engine, EngineConfig, JobSpec, Randomness};
use cuzk_engine::circuits::MulChain;
use cuzk_engine::recorded::{RecordOptions, RecordingCache};
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, Pipeline, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;

#[test]
fn partitions_the_full_check_falls_on_are_proved_as_the_others_with_its_memory_reserved() {
    let cache = RecordingCache::global();
    cache.set_options(RecordOptions {
        check_every: 3,
        sample_rows: 0,
        files: false,
        ..RecordOptions::default()
    });
    let srs = Arc::new(Srs::from_parameters(
        &generate(MulChain::random(400, 2, 0), 5).unwrap(),
    ));
    let circuits = |job: u64| -> Vec<MulChain> {
        (0..4)
            .map(|p| MulChain::random(400, 2, job * 10 + p))
            .collect()
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let rs: Vec<Vec<(Scalar, Scalar)>> = (0..3)
        .map(|_| {
            (0..4)
                .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
                .collect()
        })
        .collect();
    // The shape recorded ahead (the cache's first synthesis): a host budget of one witness-only
    // partition (the CPU backend builds the splits on the host) and the check's second recording
    // holds one partition at a time, and a checked one fills it.
    let opts = cache.options();
    cache
        .synthesize(&srs, MulChain::random(400, 2, 99), 0, &opts)
        .unwrap();
    let rec = cache
        .get(RecordingCache::key_of::<MulChain>(), &srs)
        .expect("the recording is held");
    let own = Dims::of(&srs).host_recorded();
    let budget = own + 2 * rec.bytes();
    assert!(2 * own > budget, "two witness-only partitions must not fit");
    let engine = Engine::start(
        EngineConfig {
            host_budget: budget,
            ..EngineConfig::default()
        },
        vec![Arc::new(CpuBackend::new()) as Arc<dyn Pipeline>],
        Box::new(CountingPin::default()),
    )
    .unwrap();
    // 12 partitions of one shape after the recording: every third synthesis is checked.
    for job in 0..3u64 {
        let spec = JobSpec::new(srs.clone(), circuits(job))
            .randomness(Randomness::Fixed(rs[job as usize].clone()));
        let out = engine.submit(spec).unwrap().wait().unwrap();
        let (r, s): (Vec<_>, Vec<_>) = rs[job as usize].iter().copied().unzip();
        let direct = Prover::new(&srs, &CpuBackend::new())
            .prove(circuits(job), &r, &s)
            .unwrap();
        assert_eq!(out.to_bytes(), direct.to_bytes(), "job {job}");
    }
    let checks = cache.checks_passed();
    assert!((3..=12).contains(&checks), "{checks} full checks");
    // A checked partition reserved the second recording beside its own need: the whole budget
    // (a witness-only one alone stays below it), and everything went back.
    let st = wait_until(&engine, "every reservation released", |s| {
        s.in_flight == 0 && s.host.reserved == 0
    });
    drop(engine);
    // The daemon's `engine.recording_check_every` sets the cadence for the process.
    let settings = cuzk_actors::daemon::settings::Settings::load_with_env(
        None,
        [
            ("CUZK_ENGINE__BACKEND".to_string(), "cpu".to_string()),
            (
                "CUZK_ENGINE__RECORDING_CHECK_EVERY".to_string(),
                "7".to_string(),
            ),
        ],
    )
    .unwrap();
    let (configured, _) = Engine::from_settings(&settings, None).unwrap();
    assert_eq!(cache.options().check_every, 7);
    drop(configured);
    assert_eq!(
        st.host.high_water,
        budget,
        "a checked partition reserves its need and the check's second recording ({own} + 2 × {})",
        rec.bytes()
    );
}
