//! `cuzk bench batch`: COUNT multi-partition jobs through the actor pipeline, CONCURRENCY in
//! flight, once per `--gpu-workers` value; one line per proof, then a summary in s/proof. With
//! `--gpus-sweep 1,2`: once per device count (the first 1, then the first 2 devices, a fresh
//! engine each), a `run gpus=N …` line per run, and last `gpus1_s_per_proof=… gpus2_s_per_proof=…`.

use std::collections::VecDeque;

use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cuzk_actors::daemon::settings::{BackendChoice, Residency, Settings};
use cuzk_actors::pipeline::timeline::{svg, StageTotals};
use cuzk_actors::resources::tier::Dims;
use cuzk_actors::{Engine, JobSpec};
use cuzk_engine::circuits::Example;

use crate::common::{example, example_params, Result};
use crate::progress::Progress;

#[derive(clap::Args)]
pub struct Args {
    /// Jobs (proofs) to run.
    #[arg(short = 'c', long, default_value_t = 5)]
    count: usize,
    /// Jobs in flight at once.
    #[arg(short = 'j', long, default_value_t = 3)]
    concurrency: usize,
    /// Compute workers per GPU; several values run one after the other (e.g. `1,2`).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    gpu_workers: Vec<usize>,
    /// Partitions per job.
    #[arg(short, long, default_value_t = 8)]
    partitions: usize,
    #[arg(long, default_value = "mulchain")]
    circuit: String,
    /// Circuit size (for mulchain: log2 of the domain).
    #[arg(long)]
    size: Option<usize>,
    /// Device-memory budget per GPU in MiB (default: unlimited on the CPU backend).
    #[arg(long)]
    vram_budget_mib: Option<u64>,
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// auto (CUDA if usable, else CPU), cpu or cuda; overrides the config file.
    #[arg(long)]
    backend: Option<BackendChoice>,
    /// Where the SRS bases live on a GPU: auto, device (resident, copy-stream staging) or host
    /// (uploaded with every kernel call); overrides the config file.
    #[arg(long)]
    srs_residency: Option<Residency>,
    /// A config file (see config/cuzk.toml); CUZK_* environment overrides apply too.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write the timeline of each run here as JSON and SVG (`batch-gw<N>.json/.svg`; in a
    /// sweep `batch-gpus<N>-gw<W>.json/.svg`).
    #[arg(long)]
    timeline_dir: Option<PathBuf>,
    /// Run the workload on the first N devices for each N listed (e.g. `1,2`; a count repeated
    /// is run again and averaged), a fresh engine each; the last line is
    /// `gpus1_s_per_proof=… gpus2_s_per_proof=…`. GPUs are the first N of `engine.gpus` (or of
    /// every visible GPU); on the CPU backend N CPU backends run as N devices.
    #[arg(long, value_delimiter = ',')]
    gpus_sweep: Vec<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let dir = a
        .params_dir
        .clone()
        .unwrap_or_else(crate::default_params_dir);
    let (_, size) = example(
        &a.circuit,
        a.size.or(if a.circuit == "mulchain" {
            Some(14)
        } else {
            None
        }),
        0,
    )?;
    let mut settings = Settings::load(a.config.as_deref())?;
    if let Some(b) = a.backend {
        settings.engine.backend = b;
    }
    if let Some(mib) = a.vram_budget_mib {
        settings.engine.vram_budget_mib = mib;
    }
    if let Some(r) = a.srs_residency {
        settings.engine.srs_residency = r;
    }
    let srs = Arc::new(crate::progress::phase(
        &format!("parameters for {} (size {size})", a.circuit),
        || example_params(&dir, &a.circuit, size, &settings.srs_open()),
    )?);
    let mut summary = Vec::new();
    // `--gpus-sweep`: one run per device count (a fresh engine each); else one run per
    // `--gpu-workers` value on the configured devices.
    let sweep = if a.gpus_sweep.is_empty() {
        None
    } else if a.gpu_workers.len() > 1 {
        return Err("--gpus-sweep takes one --gpu-workers value".into());
    } else {
        Some(super::gpus::Sweep::plan(&settings, &a.gpus_sweep)?)
    };
    let workers = a.gpu_workers.first().copied().unwrap_or(1);
    let runs: Vec<(Option<usize>, usize)> = match &sweep {
        Some(_) => a.gpus_sweep.iter().map(|&n| (Some(n), workers)).collect(),
        None => a.gpu_workers.iter().map(|&gw| (None, gw)).collect(),
    };
    let mut gpus_runs: Vec<(usize, f64)> = Vec::new();
    for (gpus, gw) in runs {
        if let (Some(s), Some(n)) = (&sweep, gpus) {
            s.apply(&mut settings, n);
        }
        settings.engine.gpu_workers_per_device = gw.max(1);
        let (engine, backend_name) =
            Engine::from_settings(&settings, Some(Dims::of(&srs).resident(gw)))?;
        let on = gpus.map(|n| format!(" gpus={n}")).unwrap_or_default();
        println!("# backend={backend_name}{on} gpu_workers={gw} jobs={} concurrency={} partitions={} circuit={} size={size}", a.count, a.concurrency, a.partitions, a.circuit);
        let start = Instant::now();
        let bar = Progress::bar(a.count as u64, "proofs");
        let mut in_flight = VecDeque::new();
        let (mut submitted, mut finished) = (0usize, 0usize);
        while finished < a.count {
            while submitted < a.count && in_flight.len() < a.concurrency.max(1) {
                // The circuits' random witnesses, built in parallel: one thread took ~8 s per job
                // of 8 partitions at 2^23, longer than the GPU's ~6 s, and starved it.
                let circuits: Vec<Example> = (0..a.partitions)
                    .into_par_iter()
                    .map(|p| {
                        example(&a.circuit, Some(size), (submitted * 1000 + p) as u64)
                            .map(|(c, _)| c)
                            .map_err(|e| e.to_string())
                    })
                    .collect::<std::result::Result<_, String>>()?;
                in_flight.push_back(engine.submit(JobSpec::new(srs.clone(), circuits))?);
                submitted += 1;
            }
            let Some(h) = in_flight.pop_front() else {
                break;
            };
            let out = h.wait()?;
            finished += 1;
            bar.inc();
            bar.line(&format!(
                "proof {finished:>3} job={} wall={:.3}s prove={:.3}s queue={:.3}s bytes={}",
                out.id,
                out.wall.as_secs_f64(),
                out.prove.as_secs_f64(),
                out.queue.as_secs_f64(),
                out.to_bytes().len()
            ));
        }
        drop(bar);
        let wall = start.elapsed().as_secs_f64();
        let spans = engine.timeline().spans();
        let (from, to, busy) = crate::common::steady_window(&spans);
        let status = engine.status()?;
        let s_per_proof = wall / a.count.max(1) as f64;
        println!("{}", StageTotals::of(&spans).line());
        println!(
            "summary gpu_workers={gw}: {:.3} s/proof over {} proofs, wall {:.2} s, gpu busy {:.1}% (kernel stages, first to last kernel), vram high water {} of {} bytes",
            s_per_proof,
            a.count,
            wall,
            busy * 100.0,
            status.vram[0].high_water,
            status.vram[0].capacity
        );
        // The steady state: the first-to-last-kernel window per proof (the s/proof above also
        // holds the start-up, i.e. the first job's synthesis, and the last job's collection).
        let window_s = to.saturating_sub(from) as f64 / 1e6;
        println!(
            "steady gpu_workers={gw}: {:.3} s/proof over the {:.2} s from the first to the last kernel",
            window_s / a.count.max(1) as f64,
            window_s
        );
        if let Some(n) = gpus {
            println!(
                "run gpus={n} devices_used={} s_per_proof={s_per_proof:.3} steady_s_per_proof={:.3} {}",
                super::gpus::devices_used(&spans),
                window_s / a.count.max(1) as f64,
                super::gpus::busy_line(&spans, n)
            );
            gpus_runs.push((n, s_per_proof));
        }
        if let Some(d) = &a.timeline_dir {
            std::fs::create_dir_all(d)?;
            // One file per run: a setting measured twice keeps both timelines.
            let (run, base) = match gpus {
                // This run is already in `gpus_runs`.
                Some(n) => (
                    gpus_runs.iter().filter(|(m, _)| *m == n).count(),
                    format!("batch-gpus{n}-gw{gw}"),
                ),
                None => (
                    summary.iter().filter(|(g, _)| *g == gw).count() + 1,
                    format!("batch-gw{gw}"),
                ),
            };
            let stem = if run <= 1 {
                base
            } else {
                format!("{base}-run{run}")
            };
            std::fs::write(
                d.join(format!("{stem}.json")),
                serde_json::to_vec_pretty(&spans)?,
            )?;
            let title = format!("cuzk bench batch: {backend_name}, {gw} worker(s), {} jobs × {} partitions of {} 2^{size}, {:.3} s/proof", a.count, a.partitions, a.circuit, s_per_proof);
            std::fs::write(d.join(format!("{stem}.svg")), svg(&spans, &title))?;
        }
        engine.shutdown();
        summary.push((gw, s_per_proof));
    }
    if sweep.is_none() && summary.len() > 1 {
        // Each setting once, in first-run order, as the mean of its runs (interleaving 1,2,1,2
        // spreads slow drifts of the machine over both settings).
        let mut settings: Vec<usize> = Vec::new();
        for (gw, _) in &summary {
            if !settings.contains(gw) {
                settings.push(*gw);
            }
        }
        if settings.len() < summary.len() {
            println!(
                "runs: {}",
                summary
                    .iter()
                    .map(|(gw, s)| format!("gw{gw}={s:.3}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        let mean = |gw: usize| {
            let v: Vec<f64> = summary
                .iter()
                .filter(|(g, _)| *g == gw)
                .map(|(_, s)| *s)
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        println!(
            "{}",
            settings
                .iter()
                .map(|&gw| format!("gw{gw}_s_per_proof={:.3}", mean(gw)))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if sweep.is_some() {
        for line in super::gpus::closing_lines(&gpus_runs) {
            println!("{line}");
        }
    } else if let Some((_, s)) = summary.last() {
        println!("s_per_proof={s:.3}");
    }
    Ok(())
}
