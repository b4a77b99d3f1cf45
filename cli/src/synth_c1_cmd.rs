//! `cuzk filecoin synth-c1 --sector-size 32GiB --seed S --out c1.json`: the C1 output of a
//! sparse synthetic sector (`cuzk_filecoin::synth_c1`), for proving and benchmarking PoRep at
//! sector sizes that cannot be sealed here. It prints the commands that prove it.

use std::path::PathBuf;

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (interactive PoRep, `StackedDrg…V1_1`).
    #[arg(long)]
    sector_size: String,
    /// Everything (prover id, sector number, ticket, seed, data, free labels) is drawn from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the `SealCommitPhase1Output` JSON goes.
    #[arg(long)]
    out: PathBuf,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn run(a: Args) -> Result<()> {
    let registered = cuzk_filecoin::synth_c1::registered_for(&a.sector_size)?;
    let s = cuzk_filecoin::synth_c1::generate(registered, a.seed)?;
    std::fs::write(&a.out, &s.c1_json).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let (p, id) = (hex(&s.identity.prover_id), s.identity.sector_id);
    println!(
        "synth-c1 {registered:?} seed={}: {:.2} s, {} partitions, {} challenges, {} columns \
         opened, {} bytes -> {} (vanilla proofs verified; comm_r {} comm_d {})",
        a.seed,
        s.elapsed.as_secs_f64(),
        s.partitions,
        s.challenges,
        s.opened,
        s.c1_json.len(),
        a.out.display(),
        hex(&s.comm_r),
        hex(&s.comm_d),
    );
    let c1 = a.out.display();
    println!("  cuzk prove porep --c1 {c1} --prover-id {p} --sector-id {id}");
    println!("  cuzk bench porep --c1 {c1} --prover-id {p} --sector-id {id}");
    Ok(())
}
