//! Cancel and priority reach a running partition, on the CPU backend (where one partition's
//! compute occupies every core): a cancelled job's running partition gives its cores back within
//! a second and leaves the status, and a CRITICAL job submitted behind a running LOW partition
//! goes ahead of that job's next partitions at every stage, so it finishes first.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::engine::{cpu_engine, wait_until};
use cuzk_actors::{JobError, JobSpec, Priority, Status};
use cuzk_engine::circuits::MulChain;
use cuzk_engine::setup::open_or_generate;
use cuzk_srs::{OpenOptions, Srs};

/// A 2^16 domain: a partition's compute takes seconds on two cores (its setup is cached under
/// the target directory).
const LOG_N: u32 = 16;

fn srs() -> Arc<Srs> {
    // One setup for the tests of this binary (they run at once).
    static SRS: std::sync::OnceLock<Arc<Srs>> = std::sync::OnceLock::new();
    SRS.get_or_init(setup).clone()
}

fn setup() -> Arc<Srs> {
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sched-mulchain-{LOG_N}.params"));
    let (srs, _) = open_or_generate(
        &path,
        MulChain::filling_domain(LOG_N, 2, 0),
        36,
        &OpenOptions::default(),
    )
    .unwrap();
    Arc::new(srs)
}

fn circuits(job: u64, n: usize) -> Vec<MulChain> {
    (0..n)
        .map(|p| MulChain::filling_domain(LOG_N, 2, job * 100 + p as u64))
        .collect()
}

fn computing(s: &Status, job: u64) -> bool {
    s.on_gpu[0].first().is_some_and(|k| k.0 == job) && !s.uploading[0]
}

#[test]
fn a_cancelled_running_partition_releases_its_cores_within_a_second() {
    let srs = srs();
    let engine = cpu_engine();
    // How long one partition takes here, uncancelled.
    let start = Instant::now();
    engine
        .submit(JobSpec::new(srs.clone(), circuits(1, 1)))
        .unwrap()
        .wait()
        .unwrap();
    let whole = start.elapsed();

    let job = engine
        .submit(JobSpec::new(srs.clone(), circuits(2, 1)).priority(Priority::Low))
        .unwrap();
    wait_until(&engine, "the partition to compute", |s| {
        computing(s, job.id)
    });
    std::thread::sleep(Duration::from_millis(200));
    let cancelled = Instant::now();
    assert!(engine.cancel(job.id));
    assert!(matches!(job.wait(), Err(JobError::Cancelled(_))));
    let s = wait_until(&engine, "the cancelled partition to leave", |s| {
        s.on_gpu[0].is_empty() && s.in_flight == 0 && s.jobs == 0
    });
    let took = cancelled.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "the cancelled partition held its cores {took:?} after the cancel (a whole partition takes {whole:?}): {s:?}"
    );
    assert_eq!(s.vram[0].reserved, 0, "{s:?}");
    assert_eq!(s.host.reserved, 0, "{s:?}");
    // The engine goes on serving.
    engine
        .submit(JobSpec::new(srs.clone(), circuits(3, 1)))
        .unwrap()
        .wait()
        .unwrap();
}

#[test]
fn a_critical_job_submitted_behind_a_running_low_partition_finishes_before_that_partitions_job() {
    let srs = srs();
    let engine = cpu_engine();
    let low = engine
        .submit(JobSpec::new(srs.clone(), circuits(4, 4)).priority(Priority::Low))
        .unwrap();
    // Its first partition computes, the next is staged behind it, the rest are synthesized.
    wait_until(&engine, "the LOW job's first partition to compute", |s| {
        computing(s, low.id)
    });
    let critical = engine
        .submit(JobSpec::new(srs.clone(), circuits(5, 1)).priority(Priority::High))
        .unwrap();
    let out = critical.wait().unwrap();
    assert!(
        low.poll().is_none(),
        "the LOW job ended before the CRITICAL one submitted behind its running partition"
    );
    low.wait().unwrap();
    let order = engine.status().unwrap().dispatch_order;
    assert_eq!(out.proofs.len(), 1);
    let at = |job: u64, p: usize| order.iter().position(|k| *k == (job, p)).unwrap();
    // The CRITICAL partition went ahead of the LOW job's last partitions.
    assert!(at(critical.id, 0) < at(low.id, 3), "{order:?}");
}
