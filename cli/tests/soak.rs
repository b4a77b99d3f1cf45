//! The soak (`cuzk bench soak`) on the CPU backend: 1000 small proofs through the engine's
//! pipeline with a mix of circuits, sizes, partition counts, priorities and cancellations. Every
//! job must be answered and every proof verify, and after the warm-up (50 jobs) the figures must
//! be flat:
//! - open file descriptors: equal at the start, the middle and the end;
//! - reserved VRAM and host budget and pinned bytes with nothing in flight: 0 at every sample;
//! - the live heap (counted by the binary's allocator, `CUZK_COUNT_HEAP=1`): the end at most
//!   `HEAP_SLACK_MB` above the start, and the second half grows no more than the first plus
//!   `HEAP_SLACK_MB`. The timeline keeps 256 spans, full after the warm-up, so nothing of the
//!   engine's should grow; a per-job leak of 1 KiB (1 MiB over 1000 jobs) fails it;
//! - RSS (after mimalloc gives back its freed pages): the end at most `RSS_SLACK_MB` above the
//!   start, a coarse bound on what lies outside the heap (allocator pages stay cached, so RSS is
//!   noisy by some MiB either way).

use std::collections::HashMap;
use std::process::Command;

const PROOFS: usize = 1000;
const HEAP_SLACK_MB: f64 = 0.5;
const RSS_SLACK_MB: f64 = 32.0;

#[test]
fn a_thousand_small_proofs_leave_memory_fds_and_reservations_flat() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "bench",
            "soak",
            "--backend",
            "cpu",
            "--proofs",
            &PROOFS.to_string(),
            "--mix",
            "mulchain:6,mulchain:8,bits:4",
            "--partitions",
            "2",
            "--cancel-every",
            "7",
            "--warmup",
            "50",
        ])
        .env("CUZK_PARAMS_DIR", dir.path())
        .env("CUZK_LOG__LEVEL", "warn")
        .env("CUZK_COUNT_HEAP", "1")
        // The span ring full after the warm-up, so a live heap that grows is a leak.
        .env("CUZK_ENGINE__TIMELINE_SPANS", "256")
        .output()
        .expect("run cuzk bench soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "soak failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    eprintln!("{last}");
    let f: HashMap<&str, f64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let g = |k: &str| {
        *f.get(k)
            .unwrap_or_else(|| panic!("`{k}` missing from: {last}"))
    };
    assert_eq!(g("soak_proofs"), PROOFS as f64);
    assert_eq!(g("answered"), PROOFS as f64, "{last}");
    assert_eq!(g("verified") + g("cancelled"), PROOFS as f64, "{last}");
    assert!(g("cancelled") > 0.0, "no cancellation took effect: {last}");
    assert!(g("verified") >= (PROOFS - PROOFS / 7 - 1) as f64, "{last}");
    for k in ["failed", "unanswered", "bad_proofs", "jobs_left"] {
        assert_eq!(g(k), 0.0, "{k}: {last}");
    }
    assert_eq!(g("fds_mid"), g("fds_start"), "fds grew: {last}");
    assert_eq!(g("fds_end"), g("fds_start"), "fds grew: {last}");
    let (start, mid, end) = (g("heap_start_mb"), g("heap_mid_mb"), g("heap_end_mb"));
    assert!(
        end - start <= HEAP_SLACK_MB,
        "the live heap grew {:.2} MiB: {last}",
        end - start
    );
    assert!(
        end - mid <= (mid - start).max(0.0) + HEAP_SLACK_MB,
        "the live heap grows faster in the second half: {last}"
    );
    // RSS also counts what is outside the heap (mappings, thread stacks); mimalloc keeps some
    // pages cached even after `mi_collect`, so its bound is coarse.
    let (rss_start, rss_end) = (g("rss_start_mb"), g("rss_end_mb"));
    assert!(
        rss_end - rss_start <= RSS_SLACK_MB,
        "RSS grew {:.1} MiB: {last}",
        rss_end - rss_start
    );
    // Every quiescent sample, not only the end: nothing of a job stays reserved or pinned.
    for line in stdout.lines().filter(|l| l.starts_with("sample ")) {
        for k in ["vram_reserved=0", "host_reserved=0", "pinned_bytes=0"] {
            assert!(
                line.split_whitespace().any(|w| w == k),
                "{k} expected: {line}"
            );
        }
    }
}
