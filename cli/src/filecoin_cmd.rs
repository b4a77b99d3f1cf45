//! `cuzk filecoin …`: Filecoin parameters and inputs for development and benchmarks — a seeded
//! local setup in the standard file names (not the production parameters), the parameter layout
//! a registered proof needs, and real sample inputs sealed on the CPU.

use std::path::PathBuf;
use std::time::Instant;

use cuzk_filecoin::{layout, params, registered, sample, ProofKind, ProofRequest, Registered};
use filecoin_proofs_api::RegisteredSealProof;

use crate::common::Result;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Generate parameters for a registered proof with cuzk's seeded setup, into its standard
    /// file name (and `.vk`). NOT the production parameters: proofs verify only against these.
    Setup {
        /// The kind: porep, snap, window-post, winning-post.
        #[arg(long)]
        kind: ProofKindArg,
        /// The registered proof, by name or abi number.
        #[arg(long)]
        proof: String,
        #[arg(long)]
        params_dir: Option<PathBuf>,
        #[arg(long, default_value_t = params::DEV_SETUP_SEED)]
        seed: u64,
        /// Compute the setup's fixed-base products on this GPU (same file as the CPU setup's;
        /// what makes a 2^27 setup take minutes).
        #[arg(long)]
        gpu: Option<usize>,
        /// Set up into memory only and report the time (no `.params` file, no decode cache;
        /// the `.vk` is written): the measurement of a setup too large for the disk twice.
        #[arg(long)]
        in_memory: bool,
    },
    /// The parameter layout a registered proof's circuit needs, counted from its blank circuit,
    /// and how an existing parameter file compares.
    Layout {
        #[arg(long)]
        kind: ProofKindArg,
        #[arg(long)]
        proof: String,
        #[arg(long)]
        params_dir: Option<PathBuf>,
    },
    /// Seal a sector with filecoin-proofs on the CPU (add_piece, PC1, PC2, C1) and write its C1
    /// output and the SnapDeals, WindowPoSt and WinningPoSt inputs derived from it.
    Sample {
        /// The registered seal proof (default StackedDrg2KiBV1_1).
        #[arg(long, default_value = "StackedDrg2KiBV1_1")]
        proof: String,
        /// Where the sector and the inputs go.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also derive SnapDeals and PoSt inputs.
        #[arg(long)]
        all: bool,
        /// Seal for this miner actor id (f0<ID>): the prover id derives from it, as the daemon
        /// derives it from a request's `miner_id` (default: a prover id drawn from the seed).
        #[arg(long)]
        miner_id: Option<u64>,
    },
    /// Write the C1 output of a sparse synthetic sector (any size up to 64 GiB, in seconds),
    /// which cuzk proves and verify_seal accepts as a sealed sector's.
    SynthC1(crate::synth_c1_cmd::Args),
    /// Write the vanilla proofs of a WindowPoSt partition or a WinningPoSt over sparse synthetic
    /// sectors (any size up to 64 GiB, in seconds), which cuzk proves and filecoin-proofs'
    /// verifier accepts.
    SynthPost(crate::synth_post_cmd::Args),
    /// Write the vanilla partition proofs of a SnapDeals update of a synthetic sector (any size up
    /// to 64 GiB, in seconds) and its commitments.
    SynthSnap(crate::synth_snap_cmd::Args),
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ProofKindArg {
    Porep,
    Snap,
    WindowPost,
    WinningPost,
}

impl From<ProofKindArg> for ProofKind {
    fn from(k: ProofKindArg) -> ProofKind {
        match k {
            ProofKindArg::Porep => ProofKind::PoRep,
            ProofKindArg::Snap => ProofKind::SnapDeals,
            ProofKindArg::WindowPost => ProofKind::WindowPoSt,
            ProofKindArg::WinningPost => ProofKind::WinningPoSt,
        }
    }
}

pub fn run(c: Cmd) -> Result<()> {
    match c {
        Cmd::Setup {
            kind,
            proof,
            params_dir,
            seed,
            gpu,
            in_memory,
        } => {
            let r = registered::parse(kind.into(), &proof)?;
            let dir = params::dir(params_dir.as_deref());
            // The setup logs its phases through the engine's `log` facade.
            cuzk_actors::log::bridge();
            let start = Instant::now();
            let dev = gpu.map(cuzk_engine::gpu::GpuDevice::open).transpose()?;
            let on = match &dev {
                Some(d) => cuzk_engine::setup::SetupOn::Gpu(d),
                None => cuzk_engine::setup::SetupOn::Cpu,
            };
            if in_memory {
                let (srs, path) = crate::progress::phase(
                    &format!("setting up {r} parameters in memory"),
                    || params::generate_in_memory(r, &dir, seed, on),
                )?;
                println!(
                    "{r}: set up in memory in {:.1} s: h={} l={} a={} b_g1={} b_g2={} ({} stands \
                     for them, not written; cuzk local setup, seed {seed}: not the production \
                     parameters)",
                    start.elapsed().as_secs_f64(),
                    srs.h().len(),
                    srs.l().len(),
                    srs.a().len(),
                    srs.b_g1().len(),
                    srs.b_g2().len(),
                    path.display()
                );
                return Ok(());
            }
            let (path, generated) =
                crate::progress::phase(&format!("setting up {r} parameters"), || {
                    params::generate_on(r, &dir, seed, on)
                })?;
            println!(
                "{r}: {} {} in {:.1} s (cuzk local setup, seed {seed}: not the production parameters)",
                if generated { "generated" } else { "already present:" },
                path.display(),
                start.elapsed().as_secs_f64()
            );
        }
        Cmd::Layout {
            kind,
            proof,
            params_dir,
        } => {
            let r = registered::parse(kind.into(), &proof)?;
            let start = Instant::now();
            let l = layout::of(r)?;
            println!(
                "{r}: constraints={} inputs={} aux={} domain=2^{} a={} b={} params_bytes={} (counted in {:.1} s)",
                l.constraints,
                l.inputs,
                l.aux,
                l.domain.trailing_zeros(),
                l.a,
                l.b,
                l.params_bytes(),
                start.elapsed().as_secs_f64()
            );
            let dir = params::dir(params_dir.as_deref());
            match params::locate(r, &dir) {
                Ok(path) => {
                    let srs = cuzk_srs::Srs::open(&path, &cuzk_srs::OpenOptions::default())?;
                    let ok = l.matches(&srs);
                    println!(
                        "{}: {}",
                        path.display(),
                        if ok {
                            "matches".to_string()
                        } else {
                            format!("DIFFERS: {:?}", layout::CircuitLayout::of_srs(&srs))
                        }
                    );
                    if !ok {
                        return Err("parameter layout differs from the circuit's".into());
                    }
                }
                Err(e) => println!("{e}"),
            }
        }
        Cmd::Sample {
            proof,
            out,
            seed,
            all,
            miner_id,
        } => {
            let Registered::Seal(p) = registered::parse(ProofKind::PoRep, &proof)? else {
                unreachable!()
            };
            sample_inputs(p, &out, seed, all, miner_id)?;
        }
        Cmd::SynthC1(a) => crate::synth_c1_cmd::run(a)?,
        Cmd::SynthPost(a) => crate::synth_post_cmd::run(a)?,
        Cmd::SynthSnap(a) => crate::synth_snap_cmd::run(a)?,
    }
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sample_inputs(
    p: RegisteredSealProof,
    out: &std::path::Path,
    seed: u64,
    all: bool,
    miner_id: Option<u64>,
) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let start = Instant::now();
    let prover_id = miner_id.map(cuzk_filecoin::request::prover_id_of_miner);
    let s = sample::seal(p, &out.join("sector"), 1, seed, prover_id)?;
    let c1 = out.join("c1.json");
    std::fs::write(&c1, &s.c1_json)?;
    println!(
        "sealed a {p:?} sector in {:.2} s: {} ({} bytes)",
        start.elapsed().as_secs_f64(),
        c1.display(),
        s.c1_json.len()
    );
    let prover = match miner_id {
        Some(m) => format!("--miner-id {m}"),
        None => format!("--prover-id {}", hex(&s.prover_id)),
    };
    println!(
        "  cuzk prove porep --c1 {} {prover} --sector-id {}",
        c1.display(),
        s.sector_id
    );
    if !all {
        return Ok(());
    }
    let write_vanilla = |name: &str, v: &[Vec<u8>]| -> Result<String> {
        let mut args = String::new();
        for (i, b) in v.iter().enumerate() {
            let f = out.join(format!("{name}-{i}.bin"));
            std::fs::write(&f, b)?;
            args.push_str(&format!(" --vanilla {}", f.display()));
        }
        Ok(args)
    };
    if let ProofRequest::SnapDeals {
        registered,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
    } = sample::snap(&s, &out.join("update"), seed + 1)?
    {
        let v = write_vanilla("snap", &vanilla_proofs)?;
        println!("  cuzk prove snap --registered {registered}{v} --comm-r-old {} --comm-r-new {} --comm-d-new {}", hex(&comm_r_old), hex(&comm_r_new), hex(&comm_d_new));
    }
    if let ProofRequest::WindowPoSt {
        registered,
        vanilla_proofs,
        randomness,
        prover_id,
        partition_index,
    } = sample::window_post(std::slice::from_ref(&s), s.prover_id, seed + 2)?
    {
        let v = write_vanilla("window", &vanilla_proofs)?;
        println!("  cuzk prove window-post --registered {registered}{v} --randomness {} --prover-id {} --partition {partition_index}", hex(&randomness), hex(&prover_id));
    }
    if let ProofRequest::WinningPoSt {
        registered,
        vanilla_proofs,
        randomness,
        prover_id,
    } = sample::winning_post(&s, s.prover_id, seed + 3)?
    {
        let v = write_vanilla("winning", &vanilla_proofs)?;
        println!(
            "  cuzk prove winning-post --registered {registered}{v} --randomness {} --prover-id {}",
            hex(&randomness),
            hex(&prover_id)
        );
    }
    Ok(())
}
