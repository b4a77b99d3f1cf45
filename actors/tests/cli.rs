//! The `cuzk` binary end to end: prove an example, inspect good and corrupt parameter files.

use std::process::Command;

fn cuzk(args: &[&str], params_dir: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk")).args(args).env("CUZK_PARAMS_DIR", params_dir).output().expect("run cuzk")
}

#[test]
fn prove_inspect_and_refuse_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = cuzk(&["prove", "--circuit", "bits", "--size", "4", "--partitions", "3"], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "prove failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verified=3/3"), "{stdout}");
    assert!(stdout.contains("proof_bytes=576"), "{stdout}");
    assert!(stdout.contains("synth_ms="), "{stdout}");

    // A second run reuses the parameters and their decode cache.
    let out = cuzk(&["prove", "--circuit", "bits", "--size", "4", "--partitions", "1"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("opened"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Cache("), "{}", String::from_utf8_lossy(&out.stderr));

    let params = dir.path().join("bits-4.params");
    let out = cuzk(&["srs", "inspect", params.to_str().unwrap()], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for word in ["alpha_g1", "b_g2", "cache: valid", "domain 2^"] {
        assert!(stdout.contains(word), "inspect lacks `{word}`: {stdout}");
    }

    let bytes = std::fs::read(&params).unwrap();
    let bad = dir.path().join("bad.params");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let out = cuzk(&["srs", "inspect", bad.to_str().unwrap()], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cuzk: error:") && stderr.contains("section"), "{stderr}");

    let out = cuzk(&["prove", "--circuit", "nope"], dir.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown circuit `nope`"));
}
