//! `cuzk filecoin synth-snap --sector-size 32GiB --seed S --out DIR`: the vanilla partition
//! proofs of a SnapDeals update of a synthetic sector (`cuzk_filecoin::synth_snap`; 16 partitions
//! at 32 GiB), for proving and benchmarking SnapDeals at sector sizes that cannot be sealed here.
//! They are written as `cuzk prove snap` reads them — one bincode `PartitionProof` file per
//! partition — and the commands that prove and verify them are printed with the commitments.

use std::path::PathBuf;

use cuzk_filecoin::synth_snap;

use crate::common::Result;
use crate::synth_post_cmd::{hex, write_vanilla};

#[derive(clap::Args)]
pub struct Args {
    /// 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (`StackedDrg…V1` update proofs).
    #[arg(long)]
    sector_size: String,
    /// Everything (comm_c, the old replica and the new data) is drawn from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The folder the partition proofs go to (`snap-00.bin`…; files of that pattern left by an
    /// earlier run are removed).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let registered = synth_snap::registered_for(&a.sector_size)?;
    let s = synth_snap::generate(registered, a.seed)?;
    let vanilla = write_vanilla(&a.out, "snap", 2, &s.vanilla_proofs)?;
    let bytes: usize = s.vanilla_proofs.iter().map(Vec::len).sum();
    println!(
        "synth-snap {registered:?} seed={}: {:.2} s, {} partitions, {} challenges, h={}, {bytes} \
         bytes -> {} (vanilla proofs verified)",
        a.seed,
        s.elapsed.as_secs_f64(),
        s.partitions,
        s.challenges,
        s.h,
        a.out.display(),
    );
    let inputs = format!(
        "--registered {registered:?} {vanilla} --comm-r-old {} --comm-r-new {} --comm-d-new {}",
        hex(&s.comm_r_old),
        hex(&s.comm_r_new),
        hex(&s.comm_d_new)
    );
    let proof = a.out.join("proof.bin");
    println!("  cuzk prove snap {inputs} --out {}", proof.display());
    println!("  cuzk verify snap --proof {} {inputs}", proof.display());
    Ok(())
}
