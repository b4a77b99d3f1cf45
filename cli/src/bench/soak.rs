//! `cuzk bench soak`: N small proofs through an in-process engine (the daemon's pipeline) with a
//! mix of circuits and sizes, priorities, partition counts and cancellations. Every proof is
//! verified against its verifying key, every job must be answered, and the process's RSS (after
//! mimalloc gives back its freed pages), its live heap bytes (when `CUZK_COUNT_HEAP=1`, see
//! `heap.rs`) and open file descriptors, and the engine's reserved VRAM, host budget and pinned bytes, are sampled at
//! quiescent points (nothing in flight): before the first job, after the warm-up, at the middle
//! and at the end. The last line is `soak_proofs=… answered=… verified=… …`, and the command
//! fails if a job went unanswered, a proof did not verify, or a job's reservation or pinning
//! stayed behind.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_actors::daemon::settings::{BackendChoice, Settings};
use cuzk_actors::resources::tier::Dims;
use cuzk_actors::{Engine, JobError, JobHandle, JobSpec, Priority};
use cuzk_engine::verify::Verifier;
use cuzk_srs::Srs;

use crate::common::{example, example_params, Result};
use crate::progress::Progress;

#[derive(clap::Args)]
pub struct Args {
    /// Proofs (jobs) to submit.
    #[arg(short = 'n', long, default_value_t = 1000)]
    proofs: usize,
    /// The circuits, as `circuit:size` entries; job i uses entry i mod the count.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mulchain:8,mulchain:10,bits:8"
    )]
    mix: Vec<String>,
    /// Partitions per job: job i has 1 + (i mod this).
    #[arg(short, long, default_value_t = 3)]
    partitions: usize,
    /// Every Nth job is cancelled right after it is submitted (0: none).
    #[arg(long, default_value_t = 7)]
    cancel_every: usize,
    /// Jobs in flight at once.
    #[arg(short = 'j', long, default_value_t = 6)]
    concurrency: usize,
    /// Jobs before the "start" sample (allocator pools, caches and recordings fill up first).
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// A job not answered within this many seconds counts as unanswered.
    #[arg(long, default_value_t = 300)]
    job_timeout_s: u64,
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// auto (CUDA if usable, else CPU), cpu or cuda; overrides the config file.
    #[arg(long)]
    backend: Option<BackendChoice>,
    /// A config file (see config/cuzk.toml); CUZK_* environment overrides apply too.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// One sample of the figures that must stay flat.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kb: u64,
    /// Heap bytes live (`CUZK_COUNT_HEAP=1`), the exact leak measure.
    heap: Option<i64>,
    fds: usize,
    vram_reserved: u64,
    host_reserved: u64,
    pinned: usize,
}

/// The resident set after mimalloc has given its freed pages back.
fn rss_kb() -> u64 {
    crate::heap::collect();
    crate::common::proc_status_bytes("VmRSS:").map_or(0, |b| b / 1024)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn sample(engine: &Engine) -> Result<Sample> {
    let st = engine.status()?;
    Ok(Sample {
        rss_kb: rss_kb(),
        heap: crate::heap::live_bytes(),
        fds: open_fds(),
        vram_reserved: st.vram.iter().map(|v| v.reserved).sum(),
        host_reserved: st.host.reserved,
        pinned: engine.pinned()?.0,
    })
}

fn heap_mb(s: &Sample) -> String {
    s.heap
        .map_or_else(|| "off".into(), |b| format!("{:.2}", b as f64 / MIB))
}

const MIB: f64 = 1024.0 * 1024.0;

fn print_sample(at: &str, done: usize, s: &Sample) {
    println!(
        "sample at={at} jobs_done={done} rss_mb={:.1} heap_mb={} fds={} vram_reserved={} host_reserved={} pinned_bytes={}",
        s.rss_kb as f64 / 1024.0,
        heap_mb(s),
        s.fds,
        s.vram_reserved,
        s.host_reserved,
        s.pinned
    );
}

struct Entry {
    circuit: String,
    size: usize,
    srs: Arc<Srs>,
    verifier: Verifier,
}

/// A submitted job and what the soak expects of it.
struct InFlight {
    index: usize,
    entry: usize,
    handle: JobHandle,
    cancel_sent: bool,
}

#[derive(Default)]
struct Tally {
    answered: usize,
    verified: usize,
    cancelled: usize,
    failed: usize,
    unanswered: usize,
    bad_proofs: usize,
}

impl Tally {
    fn settle(&mut self, job: InFlight, entries: &[Entry], timeout: Duration, bar: &Progress) {
        let result = job.handle.wait_timeout(timeout);
        bar.inc();
        let Some(result) = result else {
            self.unanswered += 1;
            bar.line(&format!(
                "unanswered job={} index={}",
                job.handle.id, job.index
            ));
            return;
        };
        self.answered += 1;
        match result {
            Ok(out) => {
                let e = &entries[job.entry];
                let ok = out
                    .proofs
                    .iter()
                    .zip(&out.public_inputs)
                    .all(|(p, inputs)| matches!(e.verifier.verify(p, inputs), Ok(true)));
                if ok && out.proofs.len() == out.public_inputs.len() && !out.proofs.is_empty() {
                    self.verified += 1;
                } else {
                    self.bad_proofs += 1;
                    bar.line(&format!(
                        "proof does not verify job={} {}:{}",
                        out.id, e.circuit, e.size
                    ));
                }
            }
            Err(JobError::Cancelled(_)) if job.cancel_sent => self.cancelled += 1,
            Err(err) => {
                self.failed += 1;
                bar.line(&format!("job failed index={}: {err}", job.index));
            }
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    let dir = a
        .params_dir
        .clone()
        .unwrap_or_else(crate::default_params_dir);
    let mut settings = Settings::load(a.config.as_deref())?;
    if let Some(b) = a.backend {
        settings.engine.backend = b;
    }
    let mut entries = Vec::new();
    for m in &a.mix {
        let (circuit, size) = m
            .split_once(':')
            .ok_or_else(|| format!("--mix entry `{m}`: expected circuit:size"))?;
        let size: usize = size
            .parse()
            .map_err(|e| format!("--mix entry `{m}`: size: {e}"))?;
        example(circuit, Some(size), 0)?;
        let srs = Arc::new(crate::progress::phase(
            &format!("parameters for {circuit} (size {size})"),
            || example_params(&dir, circuit, size, &settings.srs_open()),
        )?);
        let verifier = Verifier::new(srs.vk());
        entries.push(Entry {
            circuit: circuit.into(),
            size,
            srs,
            verifier,
        });
    }
    if entries.is_empty() {
        return Err("--mix names no circuit".into());
    }
    let largest = entries
        .iter()
        .max_by_key(|e| e.srs.point_bytes())
        .map(|e| Dims::of(&e.srs).resident(settings.engine.gpu_workers_per_device.max(1)));
    let (engine, backend_name) = Engine::from_settings(&settings, largest)?;
    println!(
        "# soak backend={backend_name} proofs={} mix={} partitions=1..={} cancel_every={} concurrency={} warmup={}",
        a.proofs,
        a.mix.join(","),
        a.partitions.max(1),
        a.cancel_every,
        a.concurrency.max(1),
        a.warmup
    );
    let timeout = Duration::from_secs(a.job_timeout_s);
    let priorities = [Priority::Normal, Priority::High, Priority::Low];
    let begin = sample(&engine)?;
    print_sample("begin", 0, &begin);
    let warmup = a.warmup.min(a.proofs / 2);
    let middle = warmup + (a.proofs - warmup) / 2;
    let mut checkpoints = vec![(warmup, "start"), (middle, "middle"), (a.proofs, "end")];
    checkpoints.dedup_by_key(|c| c.0);
    let mut samples: Vec<(&str, Sample)> = vec![("begin", begin)];
    let (mut tally, mut in_flight) = (Tally::default(), VecDeque::new());
    let started = Instant::now();
    let bar = Progress::bar(a.proofs as u64, "proofs");
    let mut next = 0usize;
    for (at, name) in checkpoints {
        while next < at {
            while next < at && in_flight.len() < a.concurrency.max(1) {
                let entry = next % entries.len();
                let e = &entries[entry];
                let parts = 1 + next % a.partitions.max(1);
                let circuits = (0..parts)
                    .map(|p| example(&e.circuit, Some(e.size), (next * 16 + p) as u64).map(|c| c.0))
                    .collect::<Result<Vec<_>>>()?;
                let spec = JobSpec::new(e.srs.clone(), circuits)
                    .priority(priorities[(next / entries.len()) % priorities.len()])
                    .kind("soak");
                let handle = engine.submit(spec)?;
                let cancel_sent = a.cancel_every > 0 && next % a.cancel_every == a.cancel_every - 1;
                if cancel_sent {
                    // `false` when the job had already ended; it is then verified like any other.
                    engine.cancel(handle.id);
                }
                in_flight.push_back(InFlight {
                    index: next,
                    entry,
                    handle,
                    cancel_sent,
                });
                next += 1;
            }
            if let Some(job) = in_flight.pop_front() {
                tally.settle(job, &entries, timeout, &bar);
            }
        }
        // Quiescent: every job submitted so far is answered before the sample.
        while let Some(job) = in_flight.pop_front() {
            tally.settle(job, &entries, timeout, &bar);
        }
        let s = sample(&engine)?;
        bar.suspend(|| print_sample(name, next, &s));
        samples.push((name, s));
    }
    let wall = started.elapsed().as_secs_f64();
    drop(bar);
    let status = engine.status()?;
    engine.shutdown();

    let at = |n: &str| samples.iter().find(|(k, _)| *k == n).map(|(_, s)| *s);
    let start = at("start").unwrap_or(begin);
    let end = at("end").unwrap_or(start);
    let mid = at("middle").unwrap_or(start);
    println!(
        "soak_proofs={} answered={} verified={} cancelled={} failed={} unanswered={} bad_proofs={} wall_s={wall:.1} rss_begin_mb={:.1} rss_start_mb={:.1} rss_mid_mb={:.1} rss_end_mb={:.1} heap_start_mb={} heap_mid_mb={} heap_end_mb={} fds_start={} fds_mid={} fds_end={} vram_reserved_end={} host_reserved_end={} pinned_end={} jobs_left={}",
        a.proofs,
        tally.answered,
        tally.verified,
        tally.cancelled,
        tally.failed,
        tally.unanswered,
        tally.bad_proofs,
        begin.rss_kb as f64 / 1024.0,
        start.rss_kb as f64 / 1024.0,
        mid.rss_kb as f64 / 1024.0,
        end.rss_kb as f64 / 1024.0,
        heap_mb(&start),
        heap_mb(&mid),
        heap_mb(&end),
        start.fds,
        mid.fds,
        end.fds,
        end.vram_reserved,
        end.host_reserved,
        end.pinned,
        status.jobs
    );
    if tally.answered != a.proofs || tally.bad_proofs > 0 || tally.failed > 0 {
        return Err(format!(
            "soak: {} of {} jobs answered, {} failed, {} proofs did not verify",
            tally.answered, a.proofs, tally.failed, tally.bad_proofs
        )
        .into());
    }
    // With nothing in flight only what lives as long as the engine stays: a resident SRS's
    // reservation and the staging buffers, both taken by the warm-up. Nothing of a job remains.
    if end.vram_reserved != start.vram_reserved
        || end.pinned != start.pinned
        || end.host_reserved != 0
        || status.jobs != 0
    {
        return Err(format!(
            "soak: left behind with nothing in flight: vram {} B (start {}), pinned {} B (start {}), host {} B, {} jobs",
            end.vram_reserved, start.vram_reserved, end.pinned, start.pinned, end.host_reserved, status.jobs
        )
        .into());
    }
    Ok(())
}
