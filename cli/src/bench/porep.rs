//! `cuzk bench porep --c1 FILE -c COUNT -j CONCURRENCY[,…]`: PoRep C2 proofs of one real C1 output
//! through the engine. First `--warm-up` proofs (default 1), then one proof alone (its latency and
//! stage split), then COUNT proofs with CONCURRENCY in flight; a line per proof, then s/proof,
//! GPU busy, CPU seconds per proof, peak RSS and budget high water, and stage totals. The
//! last line: `porep_ms_per_proof=<stream> porep_latency_ms=<one alone> sector=<size>`. With
//! `--gpus-sweep 1,2`: all of that once per device count (the first 1, then the first 2 devices,
//! a fresh engine each; parameters set up into the engine once), a `run gpus=N …` line per run,
//! and last `gpus1_s_per_proof=… gpus2_s_per_proof=…` (the streams' s/proof).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use cuzk_actors::filecoin::FilecoinConfig;
use cuzk_actors::pipeline::timeline::{svg, StageTotals};
use cuzk_actors::Engine;
use cuzk_filecoin::{params, verify};

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The C1 output (`SealCommitPhase1Output` JSON).
    #[arg(long)]
    c1: PathBuf,
    /// Proofs in the stream.
    #[arg(short = 'c', long, default_value_t = 32)]
    count: usize,
    /// Proofs in flight at once; a list (`-j 1,2`) runs the stream once for each, in order, over
    /// the same engine (the run's figures are the last stream's).
    #[arg(short = 'j', long, value_delimiter = ',', default_value = "32")]
    concurrency: Vec<usize>,
    #[command(flatten)]
    engine: super::setup::EngineArgs,
    /// Also check every proof with filecoin-proofs' verify_seal (needs the prover id and the
    /// sector number the C1 output was sealed with).
    #[arg(long)]
    prover_id: Option<String>,
    #[arg(long)]
    sector_id: Option<u64>,
    /// Write the stream's timeline here as JSON and SVG.
    #[arg(long)]
    timeline_dir: Option<PathBuf>,
    /// Proofs run (and not timed) before the one timed alone: they load the parameters and, where
    /// the shape was not recorded beside the setup, record it.
    #[arg(long, default_value_t = 1)]
    warm_up: usize,
    /// Run everything on the first N devices for each N listed (e.g. `1,2`), a fresh engine
    /// each; the last line is `gpus1_s_per_proof=… gpus2_s_per_proof=…`. GPUs are the first N of
    /// `engine.gpus` (or of every visible GPU); on the CPU backend N CPU backends run as N devices.
    #[arg(long, value_delimiter = ',')]
    gpus_sweep: Vec<usize>,
    /// Run everything once per VRAM budget listed, in MiB (`engine.vram_budget_mib`; 0 = the
    /// whole card), a fresh engine each over parameters set up once.
    #[arg(long, value_delimiter = ',')]
    vram_sweep: Vec<u64>,
}

/// What one engine's run measured.
struct Run {
    ms_per_proof: f64,
    latency_ms: f64,
    devices_used: usize,
    busy_each: String,
    busy: f64,
    sector: String,
    /// Each stream's (concurrency, ms/proof).
    streams: Vec<(usize, f64)>,
}

/// Parameters set up into the first engine of a sweep, installed into the later ones.
type Installed = Option<(std::sync::Arc<cuzk_srs::Srs>, PathBuf)>;

pub fn run(a: Args) -> Result<()> {
    if !a.vram_sweep.is_empty() {
        if !a.gpus_sweep.is_empty() {
            return Err("--vram-sweep and --gpus-sweep: one sweep at a time".into());
        }
        return vram_sweep(&a);
    }
    if a.gpus_sweep.is_empty() {
        return run_once(&a, None, None, &mut None).map(|_| ());
    }
    let settings = a.engine.settings()?;
    let sweep = super::gpus::Sweep::plan(&settings, &a.gpus_sweep)?;
    let mut installed = None;
    let mut runs = Vec::new();
    for &n in &a.gpus_sweep {
        let r = run_once(&a, Some((&sweep, n)), None, &mut installed)?;
        println!(
            "run gpus={n} devices_used={} s_per_proof={:.3} {}",
            r.devices_used,
            r.ms_per_proof / 1e3,
            r.busy_each
        );
        runs.push((n, r.ms_per_proof / 1e3));
    }
    for line in super::gpus::closing_lines(&runs) {
        println!("{line}");
    }
    Ok(())
}

/// The VRAM sweep: one run per budget over the same parameters, a line each, the closing line.
fn vram_sweep(a: &Args) -> Result<()> {
    let mut installed = None;
    let mut parts = Vec::new();
    let mut peak = 0u64;
    let mut sector = String::new();
    let mut failed = 0usize;
    for &mib in &a.vram_sweep {
        // The peak resident set of this run alone (VmHWM restarts from the current RSS).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let _ = cuzk_engine::gpu::streamed::take_transfer_stats();
        // A budget that fails is reported and the sweep goes on: the other budgets' figures
        // (and the parameters set up once) are not lost to one failure.
        let r = match run_once(a, None, Some(mib), &mut installed) {
            Ok(r) => r,
            Err(e) => {
                let _ = cuzk_engine::gpu::streamed::take_transfer_stats();
                println!("run vram_mib={mib} failed: {e}");
                parts.push((mib, "failed".to_string()));
                failed += 1;
                continue;
            }
        };
        let st = cuzk_engine::gpu::streamed::take_transfer_stats();
        let rss = crate::common::proc_status_bytes("VmHWM:").unwrap_or(0);
        peak = peak.max(rss);
        let parts_n = st.partitions.max(1) as f64;
        let exposed_ms = (st.gpu_ms - st.kernel_ms).max(0.0);
        println!(
            "run vram_mib={mib} s_per_proof={:.3}{} latency_s={:.3} gpu_busy={:.1}% \
             streamed_partitions={} pcie_gib_per_partition={:.2} h2d_gb_s={:.1} \
             exposed_transfer_s_per_partition={:.3} peak_rss_gib={:.1}",
            r.ms_per_proof / 1e3,
            r.streams
                .iter()
                .map(|(j, ms)| format!(" s_per_proof_j{j}={:.3}", ms / 1e3))
                .collect::<String>(),
            r.latency_ms / 1e3,
            r.busy * 100.0,
            st.partitions,
            st.h2d_bytes as f64 / parts_n / (1u64 << 30) as f64,
            if st.gpu_ms > 0.0 {
                st.h2d_bytes as f64 / 1e9 / (st.gpu_ms / 1e3)
            } else {
                0.0
            },
            exposed_ms / parts_n / 1e3,
            rss as f64 / (1u64 << 30) as f64,
        );
        parts.push((mib, format!("{:.1}", r.ms_per_proof)));
        sector = r.sector;
    }
    // The budgets in the order the issue names them whatever order they ran in: smallest first,
    // the whole card (0) last.
    parts.sort_by_key(|&(mib, _)| if mib == 0 { u64::MAX } else { mib });
    println!(
        "porep_vram_sweep {} peak_rss_gib={:.1} sector={sector}",
        parts
            .iter()
            .map(|(mib, v)| format!("{mib}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        peak as f64 / (1u64 << 30) as f64
    );
    if failed > 0 {
        return Err(format!("{failed} of {} VRAM budgets failed", a.vram_sweep.len()).into());
    }
    Ok(())
}

/// One engine's run (on the first N devices of a GPU sweep, or under one VRAM budget of a VRAM
/// sweep): the proof alone, then the stream.
fn run_once(
    a: &Args,
    gpus: Option<(&super::gpus::Sweep, usize)>,
    vram_mib: Option<u64>,
    installed: &mut Installed,
) -> Result<Run> {
    let dir = super::setup::params_dir(a.engine.params_dir.as_deref());
    let parsed = super::setup::porep_request(&a.c1, a.prover_id.as_deref(), a.sector_id)?;
    let registered = parsed.registered();
    let sector = super::setup::sector_label(registered.sector_size());
    let check = a.prover_id.is_some() && a.sector_id.is_some();
    let mut settings = a.engine.settings()?;
    if let Some((sweep, n)) = gpus {
        sweep.apply(&mut settings, n);
    }
    if let Some(mib) = vram_mib {
        settings.engine.vram_budget_mib = mib;
    }
    let (engine, devices) = Engine::from_settings(&settings, None)?;
    if let Some((srs, path)) = installed.as_ref() {
        engine.install_srs(path, srs.clone())?;
    } else if a.engine.setup_into_engine && params::locate(registered, &dir).is_err() {
        *installed = Some(super::setup::into_engine(
            &engine,
            registered,
            &dir,
            a.engine.setup_seed,
            a.engine.setup_gpu,
        )?);
    }
    let cfg = FilecoinConfig {
        params_dir: Some(dir),
        ..Default::default()
    };
    println!(
        "# {registered} sector={sector} backend={devices} count={} concurrency={}",
        a.count,
        a.concurrency
            .iter()
            .map(|j| j.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );

    let verified = |bytes: &[u8]| -> Result<&'static str> {
        if !check {
            return Ok("self");
        }
        if verify::verify(&parsed, bytes)? {
            Ok("verify_seal")
        } else {
            Err("verify_seal rejected a proof".into())
        }
    };

    // One proof alone: its latency (the first run also loads the parameters, so it is warmed
    // once and then timed).
    let mut latency_ms = f64::MAX;
    let mut alone_from = 0;
    let rounds = a.warm_up + 1;
    for round in 0..rounds {
        let timed = round + 1 == rounds;
        if timed {
            alone_from = engine.timeline().spans().len();
        }
        let start = Instant::now();
        let out = crate::progress::phase(
            if timed {
                "one proof alone"
            } else {
                "one proof alone (warm-up: loads the parameters)"
            },
            || -> Result<_> { Ok(engine.submit_parsed(parsed.clone(), &cfg)?.handle.wait()?) },
        )?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let v = verified(&out.to_bytes())?;
        println!(
            "alone {} wall={ms:.1}ms queue={}ms prove={}ms verified={v}",
            if timed { "" } else { "(warm-up)" },
            out.queue.as_millis(),
            out.prove.as_millis()
        );
        if timed {
            latency_ms = ms;
        }
    }
    let alone_spans = engine.timeline().spans();
    println!(
        "alone stages: {}",
        StageTotals::of(&alone_spans[alone_from.min(alone_spans.len())..]).line()
    );

    let mut streams = Vec::new();
    let mut last = None;
    for &j in &a.concurrency {
        let r = stream(&engine, &parsed, &cfg, a.count, j, &verified)?;
        streams.push((j, r.ms_per_proof));
        last = Some(r);
    }
    let Some(Stream {
        ms_per_proof,
        busy,
        spans,
    }) = last
    else {
        return Err("-j: at least one concurrency".into());
    };
    if let Some(d) = &a.timeline_dir {
        std::fs::create_dir_all(d)?;
        let stem = match (gpus, vram_mib) {
            (Some((_, n)), _) => format!("porep-gpus{n}"),
            (None, Some(mib)) => format!("porep-vram{mib}"),
            (None, None) => "porep".to_string(),
        };
        std::fs::write(
            d.join(format!("{stem}.json")),
            serde_json::to_vec_pretty(&spans)?,
        )?;
        let j = a.concurrency.last().copied().unwrap_or(1);
        let title = format!("cuzk bench porep: {registered}, {devices}, {} proofs, {j} in flight, {ms_per_proof:.1} ms/proof", a.count);
        std::fs::write(d.join(format!("{stem}.svg")), svg(&spans, &title))?;
    }
    // Memory: the process's peak resident set, and the budgets' high water (reservations: per
    // device the partitions' buffers, resident bases and MSM scratch; on the host the partitions).
    let gib = |b: u64| format!("{:.1}", b as f64 / (1u64 << 30) as f64);
    let (vram_hw, host_hw) = engine.status().map_or(("?".into(), "?".into()), |st| {
        let vram: Vec<String> = st.vram.iter().map(|v| gib(v.high_water)).collect();
        (vram.join(","), gib(st.host.high_water))
    });
    println!(
        "memory: peak_rss_gib={} vram_reserved_high_water_gib={vram_hw} host_reserved_high_water_gib={host_hw}",
        crate::common::proc_status_bytes("VmHWM:").map_or("?".into(), gib),
    );
    let used = super::gpus::devices_used(&spans);
    let busy_each = super::gpus::busy_line(&spans, engine.device_names().len());
    engine.shutdown();
    println!(
        "porep_ms_per_proof={ms_per_proof:.1} porep_latency_ms={latency_ms:.1} sector={sector}"
    );
    Ok(Run {
        ms_per_proof,
        latency_ms,
        devices_used: used,
        busy_each,
        busy,
        sector,
        streams,
    })
}

/// One stream's figures.
struct Stream {
    ms_per_proof: f64,
    busy: f64,
    spans: Vec<cuzk_actors::pipeline::timeline::Span>,
}

/// COUNT proofs with J in flight: a line per proof, the stage totals, the summary line and
/// `stream j=J …`.
fn stream(
    engine: &Engine,
    parsed: &cuzk_filecoin::request::Parsed,
    cfg: &FilecoinConfig,
    count: usize,
    j: usize,
    verified: &dyn Fn(&[u8]) -> Result<&'static str>,
) -> Result<Stream> {
    let first_span = engine.timeline().spans().len();
    let cpu_before = crate::common::cpu_seconds();
    let start = Instant::now();
    let bar = crate::progress::Progress::bar(count as u64, "proofs");
    let mut in_flight = VecDeque::new();
    let (mut submitted, mut finished) = (0usize, 0usize);
    while finished < count {
        while submitted < count && in_flight.len() < j.max(1) {
            in_flight.push_back(engine.submit_parsed(parsed.clone(), cfg)?.handle);
            submitted += 1;
        }
        let Some(h) = in_flight.pop_front() else {
            break;
        };
        let out = h.wait()?;
        finished += 1;
        let v = verified(&out.to_bytes())?;
        bar.inc();
        bar.line(&format!(
            "proof {finished:>3} job={} wall={:.3}s prove={:.3}s queue={:.3}s verified={v}",
            out.id,
            out.wall.as_secs_f64(),
            out.prove.as_secs_f64(),
            out.queue.as_secs_f64()
        ));
    }
    drop(bar);
    let wall = start.elapsed().as_secs_f64();
    let spans: Vec<_> = engine
        .timeline()
        .spans()
        .into_iter()
        .skip(first_span)
        .collect();
    let (_, _, busy) = crate::common::steady_window(&spans);
    let ms_per_proof = wall * 1e3 / count.max(1) as f64;
    println!("{}", StageTotals::of(&spans).line());
    // The whole process's CPU time over the stream (synthesis, prepare, uploads, collection,
    // self-verification and verify_seal) per proof.
    let cpu_per_proof = cpu_before
        .zip(crate::common::cpu_seconds())
        .map_or("?".to_string(), |(b, e)| {
            format!("{:.3}", (e - b) / count.max(1) as f64)
        });
    println!("summary: {ms_per_proof:.1} ms/proof over {} proofs, wall {wall:.2} s, gpu busy {:.1}% (first to last kernel), cpu {cpu_per_proof} s/proof (process, all threads)", count, busy * 100.0);
    println!(
        "stream j={j} ms_per_proof={ms_per_proof:.1} gpu_busy={:.1}%",
        busy * 100.0
    );
    Ok(Stream {
        ms_per_proof,
        busy,
        spans,
    })
}
