//! What the Filecoin benches (`bench porep`, `bench post`) share: the parameter directory (made
//! filecoin-proofs' parameter cache, where its verifiers read the `.vk`), a sector size as they
//! print it, cuzk's seeded setup run straight into an engine (`--setup-into-engine`), and the
//! parameter sets a bench holds in its engine ([`Held`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cuzk_actors::Engine;
use cuzk_filecoin::{params, Registered};
use cuzk_srs::Srs;

use crate::common::Result;

/// The engine and parameter options of the Filecoin benches.
#[derive(clap::Args)]
pub struct EngineArgs {
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    #[arg(long)]
    pub backend: Option<cuzk_actors::daemon::settings::BackendChoice>,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where a parameter file is absent: set the parameters up (cuzk's seeded setup, not the
    /// production ones) straight into the engine's memory, writing only the `.vk` (a 32 GiB
    /// PoRep set is ~47 GB: no file and no decode cache on disk).
    #[arg(long)]
    pub setup_into_engine: bool,
    /// The GPU that computes that setup's fixed-base products (else the CPU).
    #[arg(long)]
    pub setup_gpu: Option<usize>,
    #[arg(long, default_value_t = params::DEV_SETUP_SEED)]
    pub setup_seed: u64,
}

impl EngineArgs {
    /// The settings of `--config` (else the defaults), with `--backend` over them.
    pub fn settings(&self) -> Result<cuzk_actors::daemon::settings::Settings> {
        let mut settings = cuzk_actors::daemon::settings::Settings::load(self.config.as_deref())?;
        if let Some(b) = self.backend {
            settings.engine.backend = b;
        }
        Ok(settings)
    }
}

/// The parameter directory (`explicit`, else filecoin-proofs' rule), set as
/// `FIL_PROOFS_PARAMETER_CACHE` so that filecoin-proofs' verifiers read their `.vk` from it.
pub fn params_dir(explicit: Option<&Path>) -> PathBuf {
    let dir = params::dir(explicit);
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}

/// The PoRep request of a C1 output file, with the prover id (hex) and sector number that
/// verify_seal needs where given.
pub fn porep_request(
    c1: &Path,
    prover_id: Option<&str>,
    sector_id: Option<u64>,
) -> Result<cuzk_filecoin::request::Parsed> {
    let prover_id = prover_id
        .map(|h| cuzk_filecoin::request::hex32("prover id", h))
        .transpose()?;
    let req = cuzk_filecoin::ProofRequest::PoRep {
        c1_json: std::fs::read(c1).map_err(|e| format!("{}: {e}", c1.display()))?,
        prover_id,
        sector_id,
    };
    Ok(req.parse()?)
}

/// A sector size as the benches' last lines write it: `32GiB`, `512MiB`, `2KiB`.
pub fn sector_label(bytes: u64) -> String {
    match bytes {
        s if s >= 1 << 30 => format!("{}GiB", s >> 30),
        s if s >= 1 << 20 => format!("{}MiB", s >> 20),
        s => format!("{}KiB", s >> 10),
    }
}

/// Sets `registered`'s parameters up with cuzk's seeded setup (`seed`; the fixed-base products on
/// GPU `gpu`, else the CPU) straight into `engine`'s memory, writing only the `.vk` into `dir`
/// (a 32 GiB PoRep set is ~47 GB: no file and no decode cache on disk). A PoRep partition
/// circuit is recorded from its blank circuit beside the setup, so the first proof need not
/// record it. Returns the parameters and the path they stand for.
pub fn into_engine(
    engine: &Engine,
    registered: Registered,
    dir: &Path,
    seed: u64,
    gpu: Option<usize>,
) -> Result<(Arc<Srs>, PathBuf)> {
    cuzk_actors::log::bridge();
    let start = Instant::now();
    let dev = gpu.map(cuzk_engine::gpu::GpuDevice::open).transpose()?;
    let on = match &dev {
        Some(d) => cuzk_engine::setup::SetupOn::Gpu(d),
        None => cuzk_engine::setup::SetupOn::Cpu,
    };
    // The partition circuit is recorded from its blank circuit on a thread of its own while
    // the setup runs (both are mostly one thread), so the first proof need not record it.
    let recorder = match registered {
        Registered::Seal(p) => Some(std::thread::spawn(move || {
            let t = Instant::now();
            cuzk_filecoin::porep::record_blank(p).map(|r| (r, t.elapsed()))
        })),
        _ => None,
    };
    let (srs, path) = crate::progress::phase(
        &format!("setting up {registered} parameters into the engine"),
        || params::generate_in_memory(registered, dir, seed, on),
    )?;
    drop(dev);
    let points = srs.h().len() + srs.l().len() + srs.a().len() + srs.b_g1().len();
    let srs = Arc::new(srs);
    if let Some(h) = recorder {
        let (rec, took) = h.join().map_err(|p| {
            format!(
                "recording the partition circuit panicked: {}",
                cuzk_actors::pipeline::job::panic_text(&*p)
            )
        })??;
        rec.install(&srs)?;
        println!(
            "# recorded the partition circuit beside the setup: {:.1} s",
            took.as_secs_f64()
        );
    }
    engine.install_srs(&path, srs.clone())?;
    // The setup's and the recorder's freed memory back to the system before proving.
    crate::heap::collect();
    println!(
        "# setup into the engine: {:.1} s ({points} G1 points and the G2 B query, seed {seed}, \
         on {}; {} stands for them, not written)",
        start.elapsed().as_secs_f64(),
        gpu.map_or("the CPU".to_string(), |g| format!("GPU {g}")),
        path.display()
    );
    Ok((srs, path))
}

/// The parameter sets a bench holds in its engine, each set up or loaded when a series needs it
/// and evicted when none after it does (`bench post`: at 32 GiB no host holds every kind's
/// parameters at once).
pub struct Held<'a> {
    engine: &'a Engine,
    dir: PathBuf,
    /// `--setup-into-engine`: the seed and the setup's GPU.
    setup: Option<(u64, Option<usize>)>,
    sets: Vec<(Registered, PathBuf)>,
}

impl<'a> Held<'a> {
    pub fn new(engine: &'a Engine, dir: PathBuf, setup: Option<(u64, Option<usize>)>) -> Self {
        Held {
            engine,
            dir,
            setup,
            sets: Vec::new(),
        }
    }

    /// Holds exactly `want`: the others are evicted first (their memory given back before the
    /// next setup), then each one missing is loaded from its file or, where there is none and
    /// `setup` is given, set up into the engine.
    pub fn exactly(&mut self, want: &[Registered]) -> Result<()> {
        const GIB: f64 = (1u64 << 30) as f64;
        let (keep, evict): (Vec<_>, Vec<_>) = std::mem::take(&mut self.sets)
            .into_iter()
            .partition(|(r, _)| want.contains(r));
        self.sets = keep;
        for (r, path) in evict {
            // A file's parameters may have been evicted idle already.
            if self.engine.has_srs(&path) {
                let freed = self.engine.evict_srs_freed(&path)?;
                println!(
                    "# evicted {r}: {:.1} GiB host",
                    freed.host_bytes as f64 / GIB
                );
            }
        }
        crate::heap::collect();
        for &r in want {
            if self.sets.iter().any(|(h, _)| *h == r) {
                continue;
            }
            let path = match (params::locate(r, &self.dir), self.setup) {
                (Ok(path), _) => {
                    let t = Instant::now();
                    let srs = self.engine.load_srs(&path)?;
                    println!(
                        "# loaded {r} from {}: {:.1} s, {:.1} GiB",
                        path.display(),
                        t.elapsed().as_secs_f64(),
                        srs.point_bytes() as f64 / GIB
                    );
                    path
                }
                (Err(_), Some((seed, gpu))) => into_engine(self.engine, r, &self.dir, seed, gpu)?.1,
                (Err(missing), None) => return Err(missing.into()),
            };
            self.sets.push((r, path));
        }
        Ok(())
    }
}
