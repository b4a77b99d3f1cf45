//! `cuzk prove`: an example circuit proved end to end, or a Filecoin proof from its inputs
//! (`cuzk prove porep|snap|window-post|winning-post …`) through the engine.

use std::path::PathBuf;

use cuzk_actors::daemon::settings::{BackendChoice, Residency};
use cuzk_actors::resources::devices;
use cuzk_actors::resources::tier::Dims;
use cuzk_engine::{Prover, Verifier};
use cuzk_srs::OpenOptions;

use crate::common::{example, example_params, Result};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// A Filecoin proof from its inputs instead of an example circuit.
    #[command(subcommand)]
    kind: Option<crate::filecoin_args::Kind>,
    /// Example circuit: mulchain, many-inputs, bits, no-aux, c-only, sha256.
    #[arg(long, default_value = "sha256")]
    circuit: String,
    /// Circuit size (see `Example::new`; default per circuit).
    #[arg(long)]
    size: Option<usize>,
    /// Partitions in the proof (each with its own witness, all sharing the parameters).
    #[arg(short, long, default_value_t = 4)]
    partitions: usize,
    /// Directory of parameter files (default: $CUZK_PARAMS_DIR or ~/.cache/cuzk/params).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Check that every parameter point is in the prime-order subgroup (slow).
    #[arg(long)]
    subgroup_check: bool,
    /// Write the proof bytes (192 per partition) here.
    #[arg(long, global = true)]
    out: Option<PathBuf>,
    /// auto (CUDA if usable, else CPU), cpu or cuda.
    #[arg(long, global = true, default_value = "auto")]
    backend: BackendChoice,
    /// Filecoin: the parameter directory (default $FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long, global = true)]
    filecoin_params_dir: Option<PathBuf>,
    /// Filecoin: a config file for the engine (see config/cuzk.toml).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Filecoin: skip filecoin-proofs' own verifier after cuzk's self-verification (it needs
    /// the `.vk` file, and for PoRep the prover id and sector number).
    #[arg(long, global = true)]
    no_filecoin_verify: bool,
    /// Where the SRS bases live on a GPU: auto, device (resident) or host (uploaded per call).
    #[arg(long, default_value = "auto")]
    srs_residency: Residency,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(kind) = &a.kind {
        let opts = crate::prove_filecoin::Opts {
            out: a.out.clone(),
            backend: a.backend,
            params_dir: a.filecoin_params_dir.clone(),
            config: a.config.clone(),
            filecoin_verify: !a.no_filecoin_verify,
        };
        return crate::prove_filecoin::run(kind, &opts);
    }
    let dir = a.params_dir.unwrap_or_else(crate::default_params_dir);
    let (_, size) = example(&a.circuit, a.size, 0)?;
    let srs = crate::progress::phase(
        &format!(
            "parameters for {} (size {size}): open, or generate once",
            a.circuit
        ),
        || {
            example_params(
                &dir,
                &a.circuit,
                size,
                &OpenOptions {
                    subgroup_check: a.subgroup_check,
                    ..Default::default()
                },
            )
        },
    )?;
    let circuits = (0..a.partitions)
        .map(|i| example(&a.circuit, Some(size), 1000 + i as u64).map(|(c, _)| c))
        .collect::<Result<Vec<_>>>()?;
    let d = Dims::of(&srs);
    let dev = devices::open(a.backend, a.srs_residency, Some(d.resident(1)), 512 << 20)?;
    let backend = dev.backends[0].clone();
    let batch = crate::progress::phase(
        &format!(
            "proving {} partition(s) on {}",
            a.partitions, dev.description
        ),
        || Prover::new(&srs, backend.as_ref()).prove_random(circuits, &mut rand::thread_rng()),
    )?;
    println!(
        "circuit={} size={} partitions={} domain={} inputs={} aux={} backend={}",
        a.circuit,
        size,
        a.partitions,
        srs.domain_size(),
        srs.num_inputs(),
        srs.l().len(),
        dev.description
    );
    println!("{}", batch.timings.line());
    // Self-verification already ran inside the prover; verify once more here, visibly.
    let verifier = Verifier::new(srs.vk());
    for (i, (p, inputs)) in batch.proofs.iter().zip(&batch.public_inputs).enumerate() {
        if !verifier.verify(p, inputs)? {
            return Err(format!("partition {i}: proof does not verify").into());
        }
    }
    let bytes = batch.to_bytes();
    if let Some(out) = &a.out {
        std::fs::write(out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    println!(
        "proof_bytes={} verified={}/{} s_per_proof={:.3}",
        bytes.len(),
        batch.proofs.len(),
        batch.proofs.len(),
        batch.timings.total_ms / 1e3
    );
    Ok(())
}
