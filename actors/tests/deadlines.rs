//! Deadlines under load, on the CPU backend at 2 KiB (issue 33's `make test` items): a job that
//! ends after the deadline its submission carried is reported as late (in its output, the
//! engine's count by kind and `cuzk_deadlines_missed_total{kind}`), and a WinningPoSt submitted
//! behind a saturated PoRep stream is proved, and accepted by filecoin-proofs'
//! `verify_winning_post`, before the stream's next job ends.
//!
//! Parameters: cuzk's seeded local setup under the target directory (shared with the other
//! Filecoin tests), not Filecoin's production parameters.
#![cfg(feature = "filecoin")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::engine::{cpu_engine, wait_until};
use cuzk_actors::daemon::metrics::{Metrics, State};
use cuzk_actors::filecoin::FilecoinConfig;
use cuzk_actors::{JobSpec, Priority};
use cuzk_engine::circuits::MulChain;
use cuzk_engine::setup::open_or_generate;
use cuzk_filecoin::{params, sample};
use cuzk_srs::OpenOptions;

#[test]
fn a_missed_deadline_is_reported() {
    const LOG_N: u32 = 10;
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("deadline-mulchain-{LOG_N}.params"));
    let circuit = |seed| MulChain::filling_domain(LOG_N, 2, seed);
    let (srs, _) = open_or_generate(&path, circuit(0), 36, &OpenOptions::default()).unwrap();
    let srs = Arc::new(srs);
    let engine = cpu_engine();

    // No deadline, and one it meets: neither is reported.
    let out = engine
        .submit(JobSpec::new(srs.clone(), vec![circuit(1)]).kind("small"))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!((out.deadline, out.missed_deadline_by), (None, None));
    let out = engine
        .submit(
            JobSpec::new(srs.clone(), vec![circuit(2)])
                .kind("small")
                .deadline(Some(Duration::from_secs(600))),
        )
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(out.missed_deadline_by, None, "{out:?}");
    assert!(engine.deadlines_missed().is_empty());

    // A 1 ms deadline: the proof still comes, reported late by its wall time less 1 ms.
    let one_ms = Duration::from_millis(1);
    let out = engine
        .submit(
            JobSpec::new(srs.clone(), vec![circuit(3)])
                .kind("small")
                .deadline(Some(one_ms)),
        )
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(out.proofs.len(), 1);
    assert_eq!(out.deadline, Some(one_ms));
    assert_eq!(
        out.missed_deadline_by,
        Some(out.wall - one_ms),
        "a job that took {:?} against a 1 ms deadline",
        out.wall
    );
    assert_eq!(engine.deadlines_missed(), vec![("small".to_string(), 1)]);
    let text = Metrics::default()
        .render(&engine, None, State::Ready)
        .unwrap();
    assert!(
        text.contains("cuzk_deadlines_missed_total{kind=\"small\"} 1"),
        "{text}"
    );
    engine.shutdown();
}

#[test]
fn a_winning_post_submitted_behind_a_saturated_porep_stream_completes_before_the_streams_next_job()
{
    let f = common::fixture(None);
    let winning = sample::winning_post(&f.sector, f.sector.prover_id, 6).unwrap();
    let parsed = winning.clone().parse().unwrap();
    params::generate(parsed.registered(), &f.params, params::DEV_SETUP_SEED).unwrap();
    let cfg = FilecoinConfig {
        params_dir: Some(f.params.clone()),
        ..Default::default()
    };
    let engine = cpu_engine();
    // Alone first: loads its parameters and records its circuit, as a daemon that has proved
    // one before has.
    let alone = engine
        .submit_filecoin(winning.clone(), &cfg)
        .unwrap()
        .handle
        .wait()
        .unwrap();
    assert!(cuzk_filecoin::verify::verify(&parsed, &alone.to_bytes()).unwrap());

    // The stream: PoRep jobs at their kind's class, queued at once.
    const STREAM: usize = 3;
    let stream: Vec<_> = (0..STREAM)
        .map(|_| {
            engine
                .submit_filecoin(f.sector.porep_request(), &cfg)
                .unwrap()
                .handle
        })
        .collect();
    let ids: Vec<u64> = stream.iter().map(|h| h.id).collect();
    wait_until(&engine, "the stream's first job to compute", |s| {
        s.on_gpu[0].first().is_some_and(|k| k.0 == ids[0]) && !s.uploading[0]
    });

    let post = engine.submit_filecoin(winning, &cfg).unwrap();
    // The job running when the WinningPoSt came in (read after its submission was taken).
    let s = engine.status().unwrap();
    let running = s.on_gpu[0].first().map(|k| k.0).unwrap_or(ids[0]);
    let at = ids.iter().position(|id| *id == running).unwrap();
    assert!(
        at + 1 < STREAM,
        "the stream ran out before the WinningPoSt came in: {s:?}"
    );
    let out = post.handle.wait().unwrap();
    assert!(
        stream[at + 1].poll().is_none(),
        "the stream's next job (job {}) ended before the WinningPoSt submitted while job {running} ran ({:?} behind the stream)",
        ids[at + 1],
        out.wall
    );
    assert!(
        cuzk_filecoin::verify::verify(&parsed, &out.to_bytes()).unwrap(),
        "verify_winning_post rejected the proof made under load"
    );
    // The stream's proofs are checked by filecoin.rs; here it is stopped (cancel reaches a
    // running partition at its next stage boundary), which keeps the test short on 2 cores.
    for id in &ids {
        engine.cancel(*id);
    }
    assert_eq!(
        cuzk_actors::filecoin::default_priority(cuzk_filecoin::ProofKind::WinningPoSt),
        Priority::High
    );
    engine.shutdown();
}
