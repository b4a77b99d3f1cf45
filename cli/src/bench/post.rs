//! `cuzk bench post [--sector-size 32GiB] [-c 20] [--kinds winning,window,snap] [--c1 FILE
//! --prover-id HEX --sector-id N] [-j 2]`: PoSt latency alone and beside a PoRep stream, and
//! SnapDeals s/proof, on one engine, over synthetic full-scale inputs made in-process
//! (`cuzk_filecoin::synth_post`, `synth_snap`: no input files).
//!
//! The series, in order, each a line:
//! - `winning alone`, `window alone`: COUNT proofs one at a time (after `--warm-up` untimed ones
//!   that load the parameters and record the circuit); p50 and p99 of the wall latency.
//! - `winning loaded`, `window loaded` (with `--c1`; else skipped, saying so): a PoRep stream of
//!   the C1 output keeps `-j` proofs in flight; once its first partition is on the GPU the same
//!   COUNT proofs go one at a time, each at the priority the daemon gives its kind
//!   (`cuzk_actors::filecoin::default_priority`); p50/p99, and the stream's s/proof over that
//!   window (its partitions computed in the window, as proofs). The stream is then cancelled.
//! - `snap alone` (one proof's latency after the warm-up) and `snap stream` (COUNT proofs with
//!   `--snap-j` in flight: ms/proof).
//!
//! Every proof, the stream's too, is checked by filecoin-proofs' verifier of its kind
//! (`verify_winning_post`, `verify_window_post`, `verify_seal`,
//! `verify_empty_sector_update_proof`); a rejected one fails the bench. Each line carries the
//! process's peak RSS over its series. The last line: `post_ms winning_alone_p50=…
//! winning_loaded_p99=… window_alone_p50=… window_loaded_p99=… snap_ms_per_proof=… sector=…`
//! (`-` for a series not run).
//!
//! Parameters (set up into the engine with `--setup-into-engine` where their file is absent,
//! else loaded from it) are held only while a series needs them, so that at 32 GiB no more than
//! about two large sets are in host memory (PoRep's ~47 GB, WindowPoSt's ~45 GB, SnapDeals'):
//! winning alone holds WinningPoSt's; window alone adds WindowPoSt's (WinningPoSt's, small, stay
//! only when the loaded series will need them); the loaded series add PoRep's (its setup runs
//! while WindowPoSt's are held: the peak, ~92 GB of parameters at 32 GiB, plus the partitions in
//! flight, which the engine admits by the host memory available); before SnapDeals every set is
//! evicted, then SnapDeals' alone is set up. Recorded circuits stay in the process-wide
//! recording cache (no API drops them).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cuzk_actors::filecoin::FilecoinConfig;
use cuzk_actors::{Engine, JobError};
use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::{synth_post, synth_snap, verify, ProofKind, Registered};

use crate::common::Result;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Winning,
    Window,
    Snap,
}

#[derive(clap::Args)]
pub struct Args {
    /// Any size the synthetic generators take: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB.
    #[arg(long, default_value = "32GiB")]
    sector_size: String,
    /// Proofs in each measured series.
    #[arg(short = 'c', long, default_value_t = 20)]
    count: usize,
    #[arg(long, value_delimiter = ',', default_value = "winning,window,snap")]
    kinds: Vec<Kind>,
    /// The C1 output (`SealCommitPhase1Output` JSON) of the PoRep stream that loads the card,
    /// of the same sector size; without it the loaded series are skipped.
    #[arg(long, requires_all = ["prover_id", "sector_id"])]
    c1: Option<PathBuf>,
    /// The prover id and sector number the C1 output was sealed with (for verify_seal).
    #[arg(long)]
    prover_id: Option<String>,
    #[arg(long)]
    sector_id: Option<u64>,
    /// PoRep proofs in flight in the stream that loads the card.
    #[arg(short = 'j', long, default_value_t = 2)]
    concurrency: usize,
    /// SnapDeals proofs in flight in the SnapDeals stream.
    #[arg(long, default_value_t = 2)]
    snap_j: usize,
    /// Untimed proofs of each kind before its series (they load the parameters and record the
    /// circuit).
    #[arg(long, default_value_t = 1)]
    warm_up: usize,
    /// The seed the synthetic inputs are drawn from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    engine: super::setup::EngineArgs,
}

const GIB: f64 = (1u64 << 30) as f64;

pub fn run(a: Args) -> Result<()> {
    let dir = super::setup::params_dir(a.engine.params_dir.as_deref());
    let has = |k| a.kinds.contains(&k);
    let winning_reg = synth_post::registered_for(ProofKind::WinningPoSt, &a.sector_size)?;
    let sector = super::setup::sector_label(u64::from(winning_reg.sector_size()));
    let porep =
        a.c1.as_ref()
            .map(|c1| super::setup::porep_request(c1, a.prover_id.as_deref(), a.sector_id))
            .transpose()?;
    if let Some(p) = &porep {
        let size = super::setup::sector_label(p.registered().sector_size());
        if size != sector {
            return Err(format!("--c1 is a {size} sector's; --sector-size is {sector}").into());
        }
    }
    let settings = a.engine.settings()?;
    let (engine, devices) = Engine::from_settings(&settings, None)?;
    // The daemon's scheduling: each kind at its default class (WinningPoSt above WindowPoSt
    // above PoRep and SnapDeals).
    let cfg = FilecoinConfig {
        params_dir: Some(dir.clone()),
        ..Default::default()
    };
    println!(
        "# bench post sector={sector} backend={devices} count={} load={}",
        a.count,
        porep
            .as_ref()
            .map_or("none (no --c1)".to_string(), |p| format!(
                "{} j={}",
                p.registered(),
                a.concurrency
            ))
    );
    let setup = a
        .engine
        .setup_into_engine
        .then_some((a.engine.setup_seed, a.engine.setup_gpu));
    let mut held = super::setup::Held::new(&engine, dir, setup);
    let b = Bench {
        engine: &engine,
        cfg: &cfg,
        a: &a,
    };
    let loaded = porep.is_some();
    let (mut winning_alone, mut window_alone) = (None, None);
    let (mut winning, mut window) = (None, None);
    if has(Kind::Winning) {
        reset_peak();
        let input = b.post_input(ProofKind::WinningPoSt)?;
        held.exactly(&[input.registered()])?;
        winning_alone = Some(b.alone("winning", &input)?);
        winning = Some(input);
    }
    if has(Kind::Window) {
        reset_peak();
        let input = b.post_input(ProofKind::WindowPoSt)?;
        let mut keep: Vec<Registered> = winning
            .iter()
            .filter(|_| loaded)
            .map(|w| w.registered())
            .collect();
        keep.push(input.registered());
        held.exactly(&keep)?;
        window_alone = Some(b.alone("window", &input)?);
        window = Some(input);
    }
    let (mut winning_loaded, mut window_loaded) = (None, None);
    let posts: Vec<(&'static str, &Parsed)> = [("winning", &winning), ("window", &window)]
        .into_iter()
        .filter_map(|(l, p)| p.as_ref().map(|p| (l, p)))
        .collect();
    match &porep {
        None => {
            for (label, _) in &posts {
                println!("{label} loaded skipped: no --c1 (the PoRep stream that loads the card)");
            }
        }
        Some(porep) if !posts.is_empty() => {
            reset_peak();
            let mut keep: Vec<Registered> = posts.iter().map(|(_, p)| p.registered()).collect();
            keep.push(porep.registered());
            held.exactly(&keep)?;
            for (label, p99) in b.loaded(porep, &posts)? {
                match label {
                    "winning" => winning_loaded = Some(p99),
                    _ => window_loaded = Some(p99),
                }
            }
        }
        Some(_) => {}
    }
    drop((porep, winning, window));
    let mut snap = None;
    if has(Kind::Snap) {
        reset_peak();
        held.exactly(&[])?;
        let input = b.snap_input()?;
        held.exactly(&[input.registered()])?;
        snap = Some(b.snap(&input)?);
    }
    engine.shutdown();
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    println!(
        "post_ms winning_alone_p50={} winning_loaded_p99={} window_alone_p50={} \
         window_loaded_p99={} snap_ms_per_proof={} sector={sector}",
        ms(winning_alone),
        ms(winning_loaded),
        ms(window_alone),
        ms(window_loaded),
        ms(snap)
    );
    Ok(())
}

/// The engine, its Filecoin config and the arguments, for the series.
struct Bench<'a> {
    engine: &'a Engine,
    cfg: &'a FilecoinConfig,
    a: &'a Args,
}

/// What the PoRep stream that loads the card shares with the thread that measures beside it.
#[derive(Default)]
struct Load {
    stop: AtomicBool,
    jobs: Mutex<Vec<u64>>,
    partitions: AtomicUsize,
}

impl Bench<'_> {
    fn post_input(&self, kind: ProofKind) -> Result<Parsed> {
        let r = synth_post::registered_for(kind, &self.a.sector_size)?;
        let s = crate::progress::phase(&format!("synthetic {r:?} vanilla proofs"), || {
            synth_post::generate(r, None, self.a.seed)
        })?;
        println!(
            "# synth-post {r:?}: {} sectors, {} challenges, {:.2} s",
            s.sectors.len(),
            s.challenges,
            s.elapsed.as_secs_f64()
        );
        Ok(s.request().parse()?)
    }

    fn snap_input(&self) -> Result<Parsed> {
        let r = synth_snap::registered_for(&self.a.sector_size)?;
        let s = crate::progress::phase(&format!("synthetic {r:?} vanilla proofs"), || {
            synth_snap::generate(r, self.a.seed)
        })?;
        println!(
            "# synth-snap {r:?}: {} partitions, {} challenges, {:.2} s",
            s.partitions,
            s.challenges,
            s.elapsed.as_secs_f64()
        );
        Ok(s.request().parse()?)
    }

    /// One proof of `parsed`: its wall latency in ms (submission to answer; the verifier runs
    /// after), checked by filecoin-proofs.
    fn prove(&self, parsed: &Parsed) -> Result<(f64, cuzk_actors::JobOutput, &'static str)> {
        let t = Instant::now();
        let out = self
            .engine
            .submit_parsed(parsed.clone(), self.cfg)?
            .handle
            .wait()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let v = checked(parsed, &out.to_bytes())?;
        Ok((ms, out, v))
    }

    fn warm_up(&self, label: &str, parsed: &Parsed) -> Result<()> {
        for _ in 0..self.a.warm_up {
            let (ms, _, v) = crate::progress::phase(
                &format!("{label} warm-up (loads the parameters, records the circuit)"),
                || self.prove(parsed),
            )?;
            println!("{label} warm-up wall={ms:.1}ms verified={v}");
        }
        Ok(())
    }

    /// COUNT proofs one at a time: their latencies in ms, a line each.
    fn series(&self, label: &str, parsed: &Parsed) -> Result<Vec<f64>> {
        let bar = crate::progress::Progress::bar(self.a.count as u64, "proofs");
        let mut ms = Vec::with_capacity(self.a.count);
        for i in 1..=self.a.count {
            let (m, out, v) = self.prove(parsed)?;
            bar.inc();
            bar.line(&format!(
                "{label} proof {i:>3} wall={m:.1}ms queue={}ms prove={}ms verified={v}",
                out.queue.as_millis(),
                out.prove.as_millis()
            ));
            ms.push(m);
        }
        Ok(ms)
    }

    /// The series alone; returns its p50.
    fn alone(&self, kind: &str, parsed: &Parsed) -> Result<f64> {
        self.warm_up(kind, parsed)?;
        let ms = self.series(&format!("{kind} alone"), parsed)?;
        let (p50, p99) = (percentile(&ms, 0.5), percentile(&ms, 0.99));
        println!(
            "{kind} alone p50_ms={p50:.1} p99_ms={p99:.1} n={} peak_rss_gib={}",
            ms.len(),
            peak_gib()
        );
        Ok(p50)
    }

    /// Each of `posts`' series beside the PoRep stream; returns each one's p99.
    fn loaded(
        &self,
        porep: &Parsed,
        posts: &[(&'static str, &Parsed)],
    ) -> Result<Vec<(&'static str, f64)>> {
        let load = Load::default();
        std::thread::scope(|scope| {
            let stream = scope.spawn(|| {
                // The error as text: a boxed error cannot cross threads.
                self.porep_stream(porep, &load)
                    .map_err(|e| format!("the PoRep stream: {e}"))
            });
            let measured = self.beside(&load, || stream.is_finished(), posts);
            load.stop.store(true, Ordering::Relaxed);
            let (proved, cancelled) = stream.join().map_err(|p| {
                format!(
                    "the PoRep stream panicked: {}",
                    cuzk_actors::pipeline::job::panic_text(&*p)
                )
            })??;
            let measured = measured?;
            println!(
                "porep stream j={} proved={proved} cancelled_at_end={cancelled} verified=verify_seal",
                self.a.concurrency
            );
            Ok(measured)
        })
    }

    /// The loaded series, once the stream's first partition is on the GPU.
    fn beside(
        &self,
        load: &Load,
        stream_ended: impl Fn() -> bool,
        posts: &[(&'static str, &Parsed)],
    ) -> Result<Vec<(&'static str, f64)>> {
        crate::progress::phase("the PoRep stream's first partition onto the GPU", || loop {
            if stream_ended() {
                return Err(
                    "the PoRep stream ended before its first partition reached the GPU".to_string(),
                );
            }
            let s = self.engine.status().map_err(|e| e.to_string())?;
            let computing = s
                .on_gpu
                .iter()
                .zip(&s.uploading)
                .any(|(on, up)| on.len() > usize::from(*up));
            if computing {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        })?;
        let mut out = Vec::new();
        for (label, parsed) in posts {
            reset_peak();
            let t0 = Instant::now();
            let ms = self.series(&format!("{label} loaded"), parsed)?;
            let window = t0.elapsed();
            let (p50, p99) = (percentile(&ms, 0.5), percentile(&ms, 0.99));
            let (from, to) = (
                self.engine.timeline().us(t0),
                self.engine.timeline().us(t0 + window),
            );
            let jobs = load.jobs.lock().map(|j| j.clone()).unwrap_or_default();
            let parts = self
                .engine
                .timeline()
                .spans_where(|s| {
                    s.stage == "compute" && jobs.contains(&s.job) && (from..=to).contains(&s.end_us)
                })
                .len();
            let per_proof = load.partitions.load(Ordering::Relaxed) as f64;
            let s_per_proof = if parts == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", window.as_secs_f64() * per_proof / parts as f64)
            };
            println!(
                "{label} loaded p50_ms={p50:.1} p99_ms={p99:.1} n={} porep_s_per_proof={s_per_proof} \
                 porep_partitions={parts} window_s={:.1} peak_rss_gib={}",
                ms.len(),
                window.as_secs_f64(),
                peak_gib()
            );
            out.push((*label, p99));
        }
        Ok(out)
    }

    /// `-j` PoRep proofs in flight until `load.stop`, each checked by verify_seal; then those
    /// still in flight are cancelled (one that ends anyway is checked too). Returns the proofs
    /// made and those cancelled.
    fn porep_stream(&self, parsed: &Parsed, load: &Load) -> Result<(usize, usize)> {
        let mut in_flight = VecDeque::new();
        let mut proved = 0;
        loop {
            while !load.stop.load(Ordering::Relaxed) && in_flight.len() < self.a.concurrency.max(1)
            {
                let job = self.engine.submit_parsed(parsed.clone(), self.cfg)?;
                load.partitions.store(job.partitions, Ordering::Relaxed);
                if let Ok(mut j) = load.jobs.lock() {
                    j.push(job.handle.id);
                }
                in_flight.push_back(job.handle);
            }
            let Some(h) = in_flight.front() else {
                break;
            };
            match h.wait_timeout(Duration::from_millis(20)) {
                Some(r) => {
                    in_flight.pop_front();
                    checked(parsed, &r?.to_bytes())?;
                    proved += 1;
                }
                None if load.stop.load(Ordering::Relaxed) => break,
                None => {}
            }
        }
        for h in &in_flight {
            self.engine.cancel(h.id);
        }
        let mut cancelled = 0;
        for h in in_flight {
            match h.wait() {
                Ok(out) => {
                    checked(parsed, &out.to_bytes())?;
                    proved += 1;
                }
                Err(JobError::Cancelled(_)) => cancelled += 1,
                Err(e) => return Err(e.into()),
            }
        }
        Ok((proved, cancelled))
    }

    /// SnapDeals: one proof alone, then COUNT with `--snap-j` in flight; returns ms/proof.
    fn snap(&self, parsed: &Parsed) -> Result<f64> {
        self.warm_up("snap", parsed)?;
        let (ms, out, v) = self.prove(parsed)?;
        println!(
            "snap alone latency_ms={ms:.1} partitions={} verified={v} peak_rss_gib={}",
            out.proofs.len(),
            peak_gib()
        );
        reset_peak();
        let count = self.a.count;
        let bar = crate::progress::Progress::bar(count as u64, "proofs");
        let start = Instant::now();
        let mut in_flight = VecDeque::new();
        let (mut submitted, mut finished) = (0, 0);
        while finished < count {
            while submitted < count && in_flight.len() < self.a.snap_j.max(1) {
                in_flight.push_back(self.engine.submit_parsed(parsed.clone(), self.cfg)?.handle);
                submitted += 1;
            }
            let Some(h) = in_flight.pop_front() else {
                break;
            };
            let out = h.wait()?;
            finished += 1;
            let v = checked(parsed, &out.to_bytes())?;
            bar.inc();
            bar.line(&format!(
                "snap stream proof {finished:>3} wall={:.1}ms prove={}ms verified={v}",
                out.wall.as_secs_f64() * 1e3,
                out.prove.as_millis()
            ));
        }
        drop(bar);
        let ms_per_proof = start.elapsed().as_secs_f64() * 1e3 / count.max(1) as f64;
        println!(
            "snap stream ms_per_proof={ms_per_proof:.1} n={count} j={} peak_rss_gib={}",
            self.a.snap_j,
            peak_gib()
        );
        Ok(ms_per_proof)
    }
}

/// filecoin-proofs' verifier of `parsed`'s kind over `proof`: its name, or an error if it rejects
/// the proof.
fn checked(parsed: &Parsed, proof: &[u8]) -> Result<&'static str> {
    let name = match parsed.kind() {
        ProofKind::PoRep => "verify_seal",
        ProofKind::SnapDeals => "verify_empty_sector_update_proof",
        ProofKind::WindowPoSt => "verify_window_post",
        ProofKind::WinningPoSt => "verify_winning_post",
    };
    if verify::verify(parsed, proof)? {
        Ok(name)
    } else {
        Err(format!("{name} rejected a {} proof", parsed.registered()).into())
    }
}

/// The nearest-rank percentile `p` (0–1] of `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len().max(1));
    s.get(rank - 1).copied().unwrap_or(f64::NAN)
}

/// Restarts the process's peak resident set (VmHWM) from the current one.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_gib() -> String {
    crate::common::proc_status_bytes("VmHWM:")
        .map_or("?".into(), |b| format!("{:.1}", b as f64 / GIB))
}
