//! The fault matrix (issue 16): every stage of the real pipeline (CPU backend wrapped by the
//! fault hook, staging as a device backend does: pin, copy, unpin), every fault. For each cell the
//! job ends with an error naming the stage, the partition and the device; every reservation
//! (VRAM budget, host budget, pinned bytes and registrations) is back to its value before the
//! job; and the engine then proves the next job, which verifies. Cancellation and shutdown with a
//! job held at each stage: the job is answered and nothing stays reserved or pinned.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_actors::fault::backend::{Faulty, Staging, Tenants};
use cuzk_actors::fault::{Fault, Faults, Query, Rule, Stage};
use cuzk_actors::resources::pinner::{CountingPin, PinStats};
use cuzk_actors::resources::tier::{Dims, Tier};
use cuzk_actors::{Engine, EngineConfig, JobError, JobSpec};
use cuzk_engine::circuits::Bits;
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, Pipeline, Verifier};
use cuzk_srs::Srs;

/// Word pairs of the test circuit: mostly bits, so every query has both 0/1 scalars (its batch
/// addition) and others (its tail MSM), and `one` appears in A and B.
const PAIRS: usize = 3;

fn srs() -> Arc<Srs> {
    Arc::new(Srs::from_parameters(
        &generate(Bits::random(PAIRS, 0), 9).unwrap(),
    ))
}

fn circuits(seed: u64, n: usize) -> Vec<Bits> {
    (0..n)
        .map(|p| Bits::random(PAIRS, seed * 100 + p as u64))
        .collect()
}

struct Rig {
    engine: Engine,
    faults: Faults,
    pins: Arc<Mutex<PinStats>>,
    srs: Arc<Srs>,
    verifier: Verifier,
}

/// An engine over `devices` CPU "devices", each wrapped by the fault hook and staging through
/// pinned memory, with finite VRAM and host budgets so every reservation is counted.
fn rig(devices: usize, staging: Staging) -> Rig {
    let srs = srs();
    let faults = Faults::default();
    let part = Dims::of(&srs).device(Tier::Full, false);
    let backends = (0..devices)
        .map(|d| Faulty::new(Arc::new(CpuBackend::new()), d, &faults).staging(staging))
        .collect();
    let cfg = EngineConfig {
        vram_budget: vec![part * 3; devices],
        host_budget: Dims::of(&srs).host() * 4,
        synth_threads: 2,
        ..EngineConfig::default()
    };
    start(srs, faults, backends, cfg)
}

/// Starts an engine on `backends` (each wrapped by the fault hook of `faults`), counting pins.
fn start(srs: Arc<Srs>, faults: Faults, backends: Vec<Faulty>, cfg: EngineConfig) -> Rig {
    let pin = CountingPin::default();
    let pins = pin.stats.clone();
    let backends = backends
        .into_iter()
        .map(|b| Arc::new(b) as Arc<dyn Pipeline>)
        .collect();
    let engine = Engine::start_with_faults(cfg, backends, Box::new(pin), faults.clone()).unwrap();
    Rig {
        engine,
        faults,
        pins,
        verifier: Verifier::new(srs.vk()),
        srs,
    }
}

/// Everything a job could leave reserved: per VRAM budget (bytes, reservations), host (bytes,
/// reservations), partitions in flight, pinned (bytes, registrations), pin calls unbalanced.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Held {
    vram: Vec<(u64, usize)>,
    host: (u64, usize),
    in_flight: usize,
    jobs: usize,
    pinned: (usize, usize),
    pin_calls_open: u64,
}

fn held(r: &Rig) -> Held {
    let s = r.engine.status().unwrap();
    // Ask the pinner before taking the stats' lock: its thread takes that lock to count.
    let pinned = r.engine.pinned().unwrap();
    let p = r.pins.lock().unwrap();
    Held {
        vram: s
            .vram
            .iter()
            .map(|v| (v.reserved, v.reservations))
            .collect(),
        host: (s.host.reserved, s.host.reservations),
        in_flight: s.in_flight,
        jobs: s.jobs,
        pinned,
        pin_calls_open: p.registers - p.unregisters,
    }
}

/// Waits until everything is back to `base` (releases are messages: they may trail the answer).
fn assert_back_to(r: &Rig, base: &Held, what: &str) {
    let start = Instant::now();
    loop {
        let now = held(r);
        if now == *base {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: a reservation leaked: now {now:?}, before {base:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Proves a job and checks every proof with the verifying key.
fn prove_ok(r: &Rig, seed: u64, n: usize, what: &str) {
    let out = r
        .engine
        .submit(JobSpec::new(r.srs.clone(), circuits(seed, n)))
        .unwrap()
        .wait_timeout(Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{what}: the next job was never answered (a reservation held?)"))
        .unwrap_or_else(|e| panic!("{what}: the next job failed: {e}"));
    assert_eq!(out.proofs.len(), n);
    for (p, inputs) in out.proofs.iter().zip(&out.public_inputs) {
        assert!(
            r.verifier.verify(p, inputs).unwrap(),
            "{what}: a proof does not verify"
        );
    }
}

fn warm(r: &Rig) -> Held {
    prove_ok(r, 1, 2, "warm-up");
    let base = held(r);
    assert_eq!(base.in_flight, 0);
    base
}

/// Every stage with a site on this pipeline (each query has 0/1 scalars, so each has a batch
/// addition besides its tail MSM).
fn stages() -> Vec<Stage> {
    use Query::*;
    vec![
        Stage::Synthesis,
        Stage::Pin,
        Stage::Upload,
        Stage::H,
        Stage::Msm(H),
        Stage::Msm(L),
        Stage::Msm(A),
        Stage::Msm(BG1),
        Stage::Msm(BG2),
        Stage::BatchAdd(L),
        Stage::BatchAdd(A),
        Stage::BatchAdd(BG1),
        Stage::BatchAdd(BG2),
        Stage::Collect,
        Stage::Assemble,
        Stage::Verify,
    ]
}

/// The stage name the job's error must carry for a fault at `stage`.
fn named(stage: Stage, fault: Fault) -> &'static str {
    match (stage, fault) {
        (_, Fault::WrongResult) => "self-verification",
        (Stage::Synthesis, _) => "synthesis",
        (Stage::Pin, _) => "pin",
        (Stage::Upload, _) => "upload",
        (Stage::Collect, _) => "collect",
        (Stage::Assemble, _) => "assemble",
        (Stage::Verify, _) => "verify",
        _ => "compute",
    }
}

#[test]
fn every_fault_at_every_stage_fails_its_job_by_name_releases_everything_and_the_engine_goes_on() {
    let r = rig(1, Staging::Pinned);
    let base = warm(&r);
    let mut cells = Vec::new();
    let mut seed = 10;
    for stage in stages() {
        let device_side = !matches!(stage, Stage::Synthesis | Stage::Assemble);
        let mut faults = vec![Fault::Alloc, Fault::Launch, Fault::Panic];
        if device_side && stage != Stage::Pin && stage != Stage::Upload {
            faults.push(Fault::WrongResult);
        }
        for fault in faults {
            let what = format!("{fault:?} at {stage}");
            seed += 1;
            let rule = r.faults.add(Rule::new(stage, fault).partition(1));
            let err = r
                .engine
                .submit(JobSpec::new(r.srs.clone(), circuits(seed, 3)))
                .unwrap()
                .wait()
                .err()
                .unwrap_or_else(|| panic!("{what}: the job succeeded"));
            assert_eq!(
                r.faults.fired(rule),
                1,
                "{what}: the site was never reached"
            );
            r.faults.clear();
            let JobError::Failed {
                partition,
                what: text,
                ..
            } = &err
            else {
                panic!("{what}: {err}");
            };
            assert_eq!(*partition, 1, "{what}: {err}");
            let shown = err.to_string();
            assert!(shown.contains("partition 1"), "{what}: {shown}");
            assert!(
                shown.contains(named(stage, fault)),
                "{what}: stage not named: {shown}"
            );
            if stage != Stage::Synthesis {
                assert!(
                    text.contains("device 0"),
                    "{what}: device not named: {shown}"
                );
            }
            assert_back_to(&r, &base, &what);
            prove_ok(&r, seed + 1000, 2, &what);
            assert_back_to(&r, &base, &what);
            cells.push(what);
        }
    }
    println!("fault matrix: {} cells: {}", cells.len(), cells.join(", "));
    assert!(cells.len() >= 50);
}

#[test]
fn a_fault_while_pinning_the_staging_buffers_releases_them() {
    let r = rig(1, Staging::Through(1 << 16));
    // The first upload pins the staging buffers: fail it, then pin and prove.
    let before = held(&r);
    r.faults.add(Rule::new(Stage::Pin, Fault::Alloc));
    let err = r
        .engine
        .submit(JobSpec::new(r.srs.clone(), circuits(2, 2)))
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(err.to_string().contains("pin on device 0"), "{err}");
    assert_back_to(&r, &before, "pin fault");
    r.faults
        .add(Rule::new(Stage::Upload, Fault::Panic).partition(1));
    let err = r
        .engine
        .submit(JobSpec::new(r.srs.clone(), circuits(3, 2)))
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(err.to_string().contains("upload on device 0"), "{err}");
    // The staging buffers stay pinned for the uploader's life (pinned once), nothing more.
    let base = warm(&r);
    assert_eq!(
        r.pins.lock().unwrap().live.len(),
        2,
        "two staging buffers pinned"
    );
    prove_ok(&r, 4, 3, "after the faults");
    assert_back_to(&r, &base, "after the faults");
}

/// Where a job can be held, with the stages a cancel must answer from.
fn hold_stages() -> Vec<Stage> {
    vec![
        Stage::Synthesis,
        Stage::Pin,
        Stage::Upload,
        Stage::H,
        Stage::Msm(Query::L),
        Stage::BatchAdd(Query::BG2),
        Stage::Collect,
        Stage::Assemble,
        Stage::Verify,
    ]
}

#[test]
fn a_job_held_at_any_stage_is_answered_when_cancelled_and_releases_everything() {
    let r = rig(1, Staging::Pinned);
    let base = warm(&r);
    for (i, stage) in hold_stages().into_iter().enumerate() {
        let gate = r.faults.add(Rule::new(stage, Fault::Block).partition(0));
        let job = r
            .engine
            .submit(JobSpec::new(r.srs.clone(), circuits(20 + i as u64, 3)))
            .unwrap();
        let site = r
            .faults
            .wait_held(gate, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("never held at {stage}"));
        assert_eq!(site.key.map(|k| k.job), Some(job.id));
        assert!(r.engine.cancel(job.id), "{stage}: cancel");
        // Answered while the stage is still held.
        let answer = job.wait_timeout(Duration::from_secs(10));
        assert!(
            matches!(answer, Some(Err(JobError::Cancelled(id))) if id == job.id),
            "{stage}: {answer:?}"
        );
        r.faults.release(gate);
        r.faults.clear();
        assert_back_to(&r, &base, &format!("cancelled at {stage}"));
        prove_ok(&r, 200 + i as u64, 2, &format!("after a cancel at {stage}"));
    }
}

#[test]
fn shutdown_with_jobs_held_at_every_stage_answers_every_job_and_unpins() {
    for (i, stage) in hold_stages().into_iter().enumerate() {
        let r = rig(1, Staging::Pinned);
        warm(&r);
        let gate = r.faults.add(Rule::new(stage, Fault::Block).partition(0));
        let held_job = r
            .engine
            .submit(JobSpec::new(r.srs.clone(), circuits(40 + i as u64, 2)))
            .unwrap();
        let queued = r
            .engine
            .submit(JobSpec::new(r.srs.clone(), circuits(60 + i as u64, 2)))
            .unwrap();
        r.faults
            .wait_held(gate, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("never held at {stage}"));
        let Rig {
            engine,
            faults,
            pins,
            ..
        } = r;
        let engine = Arc::new(engine);
        let e = engine.clone();
        let stopping = std::thread::spawn(move || e.shutdown());
        for (name, h) in [("held", &held_job), ("queued", &queued)] {
            let answer = h.wait_timeout(Duration::from_secs(30));
            assert!(
                answer.is_some(),
                "{stage}: the {name} job was never answered"
            );
            if let Some(Ok(_)) = answer {
                assert_eq!(name, "queued", "{stage}: a job held at a stage finished");
            }
        }
        faults.release_all();
        stopping.join().unwrap();
        // The held stage ends once released: whatever it pinned is unpinned.
        let start = Instant::now();
        loop {
            let p = pins.lock().unwrap().clone();
            if p.registers == p.unregisters {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{stage}: pinned memory left registered after shutdown: {p:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Issue 18's "failure of one device": of three devices, one fails every partition it is given.
/// Its partitions are retried on the others, it is taken out of service after
/// `device_fail_limit` consecutive failures (status says why), and the job verifies.
#[test]
fn a_device_that_keeps_failing_is_taken_out_of_service_and_its_partitions_finish_elsewhere() {
    let srs = srs();
    let faults = Faults::default();
    let part = Dims::of(&srs).device(Tier::Full, false);
    let backends = (0..3)
        .map(|d| Faulty::new(Arc::new(CpuBackend::new()), d, &faults).staging(Staging::Pinned))
        .collect();
    let cfg = EngineConfig {
        vram_budget: vec![part * 2; 3],
        device_fail_limit: 2,
        synth_threads: 2,
        ..EngineConfig::default()
    };
    let r = start(srs, faults, backends, cfg);
    let base = held(&r);
    let bad = r.faults.add(
        Rule::new(Stage::Msm(Query::L), Fault::Launch)
            .device(1)
            .times(usize::MAX),
    );
    prove_ok(&r, 7, 9, "a job spread over a failing device");
    let failed = r.faults.fired(bad);
    assert!(failed >= 1, "device 1 was never given a partition");
    let s = r.engine.status().unwrap();
    assert!(s.out_of_service[0].is_none() && s.out_of_service[2].is_none());
    if failed >= 2 {
        let why = s.out_of_service[1]
            .as_deref()
            .expect("device 1 still in service");
        assert!(
            why.contains("consecutive") && why.contains("msm_L"),
            "{why}"
        );
        // Out of service: no more work for it.
        prove_ok(&r, 8, 6, "after device 1 left service");
        assert_eq!(
            r.faults.fired(bad),
            failed,
            "work went to a device out of service"
        );
    }
    assert_back_to(&r, &base, "after the retries");
    println!(
        "device 1 failed {failed} partitions; status: {:?}",
        s.out_of_service
    );
}

/// Issue 16 item 3 on the CPU: other processes (simulated by [`Tenants`]) take device memory
/// after the engine started. Before each reservation the VRAM budget follows what they leave:
/// a partition that fits only in pieces takes the chunked tier (the budget's high-water mark
/// stays below a whole partition); one that does not fit at all waits with nothing reserved,
/// and goes on when they free the memory. No job fails, every proof verifies.
#[test]
fn memory_other_processes_take_makes_partitions_chunk_or_wait_never_fail() {
    let srs = srs();
    let faults = Faults::default();
    let dims = Dims::of(&srs);
    let full = dims.device(Tier::Full, false);
    let least = dims.device(Tier::Chunked { chunk: 0 }, false);
    let capacity = full * 2;
    let tenants = Tenants::new(capacity);
    let backend = Faulty::new(Arc::new(CpuBackend::new()), 0, &faults)
        .staging(Staging::Pinned)
        .tenants(&tenants);
    let cfg = EngineConfig {
        vram_budget: vec![capacity],
        vram_reserve: 0,
        host_budget: dims.host() * 4,
        synth_threads: 2,
        ..EngineConfig::default()
    };
    let r = start(srs, faults, vec![backend], cfg);
    let base = held(&r);

    // Others leave less than a whole partition: the partitions take the chunked tier.
    let left = full - 1;
    tenants.hold(capacity - left);
    prove_ok(
        &r,
        21,
        3,
        "with others holding all but a chunked partition's room",
    );
    let s = r.engine.status().unwrap();
    assert_eq!(s.vram[0].available, left, "the budget ignores the others");
    assert!(
        s.vram[0].high_water <= left && s.vram[0].high_water < full,
        "a partition was reserved whole ({} bytes) while only {left} were free",
        s.vram[0].high_water
    );
    assert_back_to(&r, &base, "after the chunked job");

    // Others leave less than the smallest chunked partition: the job waits, reserving nothing.
    tenants.hold(capacity - least / 2);
    let job = r
        .engine
        .submit(JobSpec::new(r.srs.clone(), circuits(22, 2)))
        .unwrap();
    assert!(
        job.wait_timeout(Duration::from_millis(1500)).is_none(),
        "the job ended while no partition could fit"
    );
    let s = r.engine.status().unwrap();
    assert_eq!(s.vram[0].reserved, 0, "VRAM reserved beyond what is free");
    assert_eq!(s.jobs, 1, "the waiting job is not live");
    // They free it: the job goes on and verifies.
    tenants.hold(0);
    let out = job
        .wait_timeout(Duration::from_secs(60))
        .expect("the job never resumed after the memory was freed")
        .expect("the job failed instead of waiting");
    for (p, inputs) in out.proofs.iter().zip(&out.public_inputs) {
        assert!(r.verifier.verify(p, inputs).unwrap());
    }
    assert_eq!(r.engine.status().unwrap().vram[0].available, capacity);
    assert_back_to(&r, &base, "after the waiting job");
}

/// The job's queue time (`JobOutput::queue`) ends when its first partition starts synthesizing:
/// a synthesis held for 1.5 s is in the job's wall time, not in its queue time.
#[test]
fn a_slow_synthesis_counts_in_the_wall_time_not_in_the_queue_time() {
    let r = rig(1, Staging::Pinned);
    warm(&r);
    let gate = r
        .faults
        .add(Rule::new(Stage::Synthesis, Fault::Block).partition(0));
    let job = r
        .engine
        .submit(JobSpec::new(r.srs.clone(), circuits(90, 1)))
        .unwrap();
    r.faults
        .wait_held(gate, Duration::from_secs(30))
        .expect("synthesis never held");
    let hold = Duration::from_millis(1500);
    std::thread::sleep(hold);
    r.faults.release(gate);
    r.faults.clear();
    let out = job
        .wait_timeout(Duration::from_secs(120))
        .expect("never answered")
        .expect("the job failed");
    assert!(
        out.wall >= hold,
        "wall {:?} shorter than the hold",
        out.wall
    );
    assert!(
        out.queue < Duration::from_secs(1),
        "queue {:?} counts the {hold:?} synthesis (wall {:?})",
        out.queue,
        out.wall
    );
}

/// `LoadedSrs::jobs` (gRPC GetStatus' `ref_count`) and the evict refusal count the jobs that use
/// the parameters, not the handles held: a caller's own handle neither shows nor refuses.
#[test]
fn the_parameters_count_the_jobs_that_use_them_and_evict_is_refused_only_while_one_does() {
    let r = rig(1, Staging::Pinned);
    warm(&r);
    let path = std::path::PathBuf::from("/nonexistent/cuzk-test/params");
    r.engine.install_srs(&path, r.srs.clone()).unwrap();
    let srs = r.engine.load_srs(&path).unwrap();
    let gate = r
        .faults
        .add(Rule::new(Stage::Synthesis, Fault::Block).partition(0));
    let job = r
        .engine
        .submit(JobSpec::new(srs.clone(), circuits(95, 1)))
        .unwrap();
    r.faults
        .wait_held(gate, Duration::from_secs(30))
        .expect("synthesis never held");
    let loaded = r.engine.loaded_srs().unwrap();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0].jobs, 1, "one job uses them: {loaded:?}");
    let refused = r
        .engine
        .evict_srs(&path)
        .expect_err("evicted while a job uses them");
    assert!(
        refused.to_string().contains("in use by 1 job "),
        "the refusal names one job: {refused}"
    );
    r.faults.release(gate);
    r.faults.clear();
    job.wait_timeout(Duration::from_secs(120))
        .expect("never answered")
        .expect("the job failed");
    let loaded = r.engine.loaded_srs().unwrap();
    assert_eq!(loaded[0].jobs, 0, "the job is answered: {loaded:?}");
    // This test still holds `srs` (and the rig its own handle): not a job, so no refusal.
    assert!(loaded[0].holders >= 1, "{loaded:?}");
    r.engine.evict_srs(&path).unwrap();
    assert!(r.engine.loaded_srs().unwrap().is_empty());
    drop(srs);
}
