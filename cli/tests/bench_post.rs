//! `cuzk bench post` as a user runs it, at 2 KiB on the CPU backend without the PoRep load (the
//! quickest kind: WindowPoSt, two sectors): synthetic inputs made in-process, parameters set up
//! into the engine, every proof checked by filecoin-proofs' verifier, and the closing line.

use std::process::Command;

#[test]
fn bench_post_proves_window_posts_at_2kib_each_accepted_by_filecoin_proofs_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "bench",
            "post",
            "--sector-size",
            "2KiB",
            "--kinds",
            "window",
            "--count",
            "2",
            "--backend",
            "cpu",
            "--setup-into-engine",
            "--params-dir",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The warm-up and the two timed proofs, each accepted.
    assert_eq!(
        stdout.matches("verified=verify_window_post").count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("window alone p50_ms="), "{stdout}");
    assert!(
        stdout.contains("window loaded skipped: no --c1"),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    let fields: Vec<&str> = last.split(' ').collect();
    assert_eq!(fields[0], "post_ms", "{last}");
    let value = |key: &str| {
        fields
            .iter()
            .find_map(|f| f.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {key} in {last}"))
    };
    for absent in [
        "winning_alone_p50",
        "winning_loaded_p99",
        "window_loaded_p99",
    ] {
        assert_eq!(value(absent), "-", "{last}");
    }
    assert_eq!(value("snap_ms_per_proof"), "-", "{last}");
    assert_eq!(value("sector"), "2KiB", "{last}");
    let p50: f64 = value("window_alone_p50").parse().unwrap();
    assert!(p50 > 0.0, "{last}");
}
