//! The `cuzk` binary end to end: prove an example, inspect good and corrupt parameter files, run
//! the batch bench with a repeated setting.

use std::process::Command;

fn cuzk(args: &[&str], params_dir: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .env("CUZK_PARAMS_DIR", params_dir)
        .output()
        .expect("run cuzk")
}

#[test]
fn prove_inspect_and_refuse_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = cuzk(
        &[
            "prove",
            "--circuit",
            "bits",
            "--size",
            "4",
            "--partitions",
            "3",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "prove failed: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified=3/3"), "{stdout}");
    assert!(stdout.contains("proof_bytes=576"), "{stdout}");
    assert!(stdout.contains("synth_ms="), "{stdout}");

    // A second run reuses the parameters and their decode cache.
    let out = cuzk(
        &[
            "prove",
            "--circuit",
            "bits",
            "--size",
            "4",
            "--partitions",
            "1",
        ],
        dir.path(),
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("opened"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Cache("),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

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
    assert!(
        stderr.contains("cuzk: error:") && stderr.contains("section"),
        "{stderr}"
    );

    let out = cuzk(&["prove", "--circuit", "nope"], dir.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown circuit `nope`"));
}

#[test]
fn bench_batch_prints_one_line_per_proof_and_the_mean_of_repeated_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let tl = dir.join("timelines");
    let out = cuzk(
        &[
            "bench",
            "batch",
            "--backend",
            "cpu",
            "-c",
            "2",
            "-j",
            "2",
            "-p",
            "2",
            "--size",
            "10",
            "--gpu-workers",
            "1,2,1",
            "--timeline-dir",
            tl.to_str().unwrap(),
        ],
        &dir,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("proof ")).count(),
        6,
        "{stdout}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("summary gpu_workers="))
            .count(),
        3
    );
    // The steady-state rate of each run: positive, and no slower than the run's s/proof.
    let steady: Vec<f64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("steady gpu_workers="))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(steady.len(), 3, "{stdout}");
    let overall: Vec<f64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("summary gpu_workers="))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    for (s, o) in steady.iter().zip(&overall) {
        assert!(
            *s > 0.0 && *s <= *o + 0.001,
            "steady {s} s/proof against {o} overall"
        );
    }
    let runs = lines
        .iter()
        .find(|l| l.starts_with("runs: "))
        .expect("a runs line");
    let run = |k: &str| -> Vec<f64> {
        runs.split_whitespace()
            .filter_map(|w| w.strip_prefix(k))
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (gw1, gw2) = (run("gw1="), run("gw2="));
    assert_eq!((gw1.len(), gw2.len()), (2, 1));
    let want = format!(
        "gw1_s_per_proof={:.3} gw2_s_per_proof={:.3}",
        (gw1[0] + gw1[1]) / 2.0,
        gw2[0]
    );
    // Means of values printed to 3 decimals may differ from the mean of the exact values by 0.001.
    let got = lines[lines.len() - 2];
    let parse = |l: &str| -> Vec<f64> {
        l.split_whitespace()
            .map(|w| w.split('=').nth(1).unwrap().parse().unwrap())
            .collect()
    };
    for (g, w) in parse(got).iter().zip(parse(&want)) {
        assert!((g - w).abs() <= 0.0015, "{got} vs {want}");
    }
    assert!(lines[lines.len() - 1].starts_with("s_per_proof="));
    for f in ["batch-gw1.json", "batch-gw1-run2.svg", "batch-gw2.svg"] {
        assert!(tl.join(f).exists(), "{f} was not written");
    }
}

#[test]
fn kernels_build_fills_the_kernel_cache_without_a_gpu() {
    if let Err(why) = cuzk_engine::gpu::nvrtc::nvrtc_present() {
        assert!(
            std::env::var_os("CUZK_REQUIRE_NVRTC").is_none(),
            "CUZK_REQUIRE_NVRTC is set but NVRTC is missing: {why}"
        );
        eprintln!("SKIPPED kernels_build_fills_the_kernel_cache_without_a_gpu: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("kernels");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["kernels", "build", "--arch", "sm_90"])
            .env("CUZK_KERNEL_CACHE", &cache)
            .output()
            .unwrap()
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let modules = [
        "arith",
        "ntt",
        "h",
        "msm",
        "batch_add",
        "spmv",
        "fixed_base",
    ];
    for m in modules {
        let cubin = std::fs::read_dir(&cache)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                name.starts_with(&format!("{m}-sm_90-")) && name.ends_with(".cubin")
            });
        let cubin = cubin.unwrap_or_else(|| panic!("no cubin for {m} in the cache"));
        assert!(
            cubin.metadata().unwrap().len() > 1000,
            "{m}'s cubin is empty"
        );
        assert!(stdout.contains(&format!("{m:<9} sm_90")), "{stdout}");
    }
    // A second build finds everything cached.
    let again = String::from_utf8_lossy(&run().stdout).to_string();
    assert_eq!(
        again.matches("already cached").count(),
        modules.len(),
        "{again}"
    );
    // Nonsense architectures are refused by name.
    let bad = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["kernels", "build", "--arch", "9x"])
        .output()
        .unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("9x"));
}

/// `bench batch --gpus-sweep 1,2` on the CPU backend (N CPU backends as N devices): a run line per
/// device count, the second run really on two devices, and the last line
/// `gpus1_s_per_proof=… gpus2_s_per_proof=…` with positive figures; bad counts refused.
#[test]
fn bench_batch_sweeps_one_then_two_devices() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let tl = dir.join("timelines");
    let args = [
        "bench",
        "batch",
        "--backend",
        "cpu",
        "-c",
        "2",
        "-j",
        "2",
        "-p",
        "6",
        "--size",
        "10",
    ];
    let out = cuzk(
        &[
            &args[..],
            &[
                "--gpus-sweep",
                "1,2",
                "--timeline-dir",
                tl.to_str().unwrap(),
            ],
        ]
        .concat(),
        &dir,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("proof ")).count(),
        4,
        "{stdout}"
    );
    let runs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("run gpus="))
        .collect();
    assert_eq!(runs.len(), 2, "{stdout}");
    assert!(
        runs[0].starts_with("run gpus=1 devices_used=1 ") && runs[0].contains("busy=[d0 "),
        "{}",
        runs[0]
    );
    assert!(
        runs[1].starts_with("run gpus=2 devices_used=2 ") && runs[1].contains(" d1 "),
        "{}",
        runs[1]
    );
    assert!(stdout.contains("# backend=cpu × 2 devices"), "{stdout}");
    let last = lines.last().unwrap();
    let kv: Vec<(&str, f64)> = last
        .split_whitespace()
        .map(|w| {
            let (k, v) = w.split_once('=').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();
    assert_eq!(
        kv.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        vec!["gpus1_s_per_proof", "gpus2_s_per_proof"],
        "{last}"
    );
    assert!(kv.iter().all(|(_, v)| *v > 0.0), "{last}");
    // The same figures as the run lines.
    for (run, (_, v)) in runs.iter().zip(&kv) {
        let s: f64 = run
            .split_whitespace()
            .find_map(|w| w.strip_prefix("s_per_proof="))
            .unwrap()
            .parse()
            .unwrap();
        assert!((s - v).abs() < 0.0015, "{run} vs {last}");
    }
    for f in ["batch-gpus1-gw1.json", "batch-gpus2-gw1.svg"] {
        assert!(tl.join(f).exists(), "{f} was not written");
    }

    for (sweep, workers, want) in [
        ("0,1", "1", "at least 1 device"),
        ("1,2", "1,2", "one --gpu-workers value"),
    ] {
        let out = cuzk(
            &[
                &args[..],
                &["--gpus-sweep", sweep, "--gpu-workers", workers],
            ]
            .concat(),
            &dir,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(want), "{stderr}");
    }
    // Asking a CUDA backend for more GPUs than there are (none here, or fewer than 64): an error.
    let out = cuzk(
        &[
            "bench",
            "batch",
            "--backend",
            "cuda",
            "-c",
            "1",
            "--size",
            "10",
            "--gpus-sweep",
            "64",
        ],
        &dir,
    );
    assert!(!out.status.success());
}

/// A daemon on two CPU devices (`CUZK_ENGINE__CPU_DEVICES=2`): `ctl status` lists both under
/// `gpus`, each in service with its queue, budget and summary line; a duplicate in
/// `CUZK_ENGINE__GPUS` stops the daemon at start with an error naming the key.
#[test]
fn ctl_status_lists_every_device_and_bad_gpus_are_refused() {
    use cuzk_actors::daemon::control::client::call;
    use cuzk_actors::daemon::control::proto::{Request, Response};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--socket", socket.to_str().unwrap()])
        .env("CUZK_ENGINE__BACKEND", "cpu")
        .env("CUZK_ENGINE__CPU_DEVICES", "2")
        .env("CUZK_PARAMS_DIR", dir.path())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !matches!(call(&socket, &Request::Ready), Ok(Response::Ok(ref s)) if s == "ready") {
        assert!(
            start.elapsed().as_secs() < 60,
            "daemon did not become ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = cuzk(
        &["ctl", "--socket", socket.to_str().unwrap(), "status"],
        dir.path(),
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus = v["gpus"].as_array().expect("a gpus list");
    assert_eq!(gpus.len(), 2, "{v}");
    for (i, g) in gpus.iter().enumerate() {
        assert_eq!(
            (
                g["index"].as_u64(),
                g["name"].as_str(),
                g["in_service"].as_bool()
            ),
            (Some(i as u64), Some("cpu"), Some(true)),
            "{g}"
        );
        assert!(
            g["staged"].as_array().is_some() && g["vram_unlimited"] == true,
            "{g}"
        );
        let line = g["summary"].as_str().unwrap();
        assert!(
            line.starts_with(&format!("device {i} cpu: in service; computing -")),
            "{line}"
        );
    }

    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "daemon",
            "--socket",
            dir.path().join("b.sock").to_str().unwrap(),
        ])
        .env("CUZK_ENGINE__GPUS", "1,1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("engine.gpus") && stderr.contains("twice"),
        "{stderr}"
    );
}
