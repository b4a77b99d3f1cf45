//! `cuzk filecoin synth-post --kind window|winning --sector-size 32GiB [--sectors N] --seed S
//! --out DIR`: the vanilla proofs of a WindowPoSt partition (default: the registered proof's full
//! partition, 2349 sectors at 32 GiB) or a WinningPoSt over sparse synthetic sectors
//! (`cuzk_filecoin::synth_post`), for proving and benchmarking PoSt at sector sizes that cannot be
//! sealed here. They are written as `cuzk prove` reads a node's vanilla proofs — one bincode
//! `FallbackPoStSectorProof` file per sector, in sector order — and the commands that prove and
//! verify them are printed.

use std::path::{Path, PathBuf};

use cuzk_filecoin::{synth_post, ProofKind};

use crate::common::Result;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PoStKind {
    Window,
    Winning,
}

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    kind: PoStKind,
    /// 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (`StackedDrgWindow…V1_2`, `StackedDrgWinning…V1`).
    #[arg(long)]
    sector_size: String,
    /// WindowPoSt: sectors in the partition (default: the registered proof's sector count).
    /// WinningPoSt takes 1.
    #[arg(long)]
    sectors: Option<usize>,
    /// Everything (prover id, randomness, sector numbers, comm_c, leaves) is drawn from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The folder the vanilla proofs go to (`window-00000.bin`… or `winning-0.bin`; files of
    /// that pattern left by an earlier run are removed).
    #[arg(long)]
    out: PathBuf,
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes `proofs` as `dir/{prefix}-{i}.bin` (`i` zero-padded to `width` digits, so that a shell
/// glob lists them in order), removing files of that pattern beyond them from an earlier run;
/// returns the `--vanilla` arguments that name them (a `printf` over the glob for more than four).
pub(crate) fn write_vanilla(
    dir: &Path,
    prefix: &str,
    width: usize,
    proofs: &[Vec<u8>],
) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ours = |name: &str| {
        name.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_suffix(".bin"))
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
    };
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry?.path();
        if path.file_name().and_then(|n| n.to_str()).is_some_and(ours) {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let mut files = Vec::with_capacity(proofs.len());
    for (i, p) in proofs.iter().enumerate() {
        let f = dir.join(format!("{prefix}-{i:0width$}.bin"));
        std::fs::write(&f, p).map_err(|e| format!("{}: {e}", f.display()))?;
        files.push(f);
    }
    Ok(if files.len() <= 4 {
        files
            .iter()
            .map(|f| format!("--vanilla {}", f.display()))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        format!(
            "$(printf -- '--vanilla %s ' {}/{prefix}-*.bin)",
            dir.display()
        )
    })
}

pub fn run(a: Args) -> Result<()> {
    let kind = match a.kind {
        PoStKind::Window => ProofKind::WindowPoSt,
        PoStKind::Winning => ProofKind::WinningPoSt,
    };
    let registered = synth_post::registered_for(kind, &a.sector_size)?;
    let s = synth_post::generate(registered, a.sectors, a.seed)?;
    let (prefix, width) = match a.kind {
        PoStKind::Window => ("window", 5),
        PoStKind::Winning => ("winning", 1),
    };
    let vanilla = write_vanilla(&a.out, prefix, width, &s.vanilla_proofs)?;
    let bytes: usize = s.vanilla_proofs.iter().map(Vec::len).sum();
    println!(
        "synth-post {registered:?} seed={}: {:.2} s, {} sectors (numbers {}..={}), {} challenges, \
         {bytes} bytes in {} files -> {} (vanilla proofs verified)",
        a.seed,
        s.elapsed.as_secs_f64(),
        s.sectors.len(),
        s.sectors.first().map_or(0, |x| x.0),
        s.sectors.last().map_or(0, |x| x.0),
        s.challenges,
        s.vanilla_proofs.len(),
        a.out.display(),
    );
    let partition = match a.kind {
        PoStKind::Window => " --partition 0",
        PoStKind::Winning => "",
    };
    let inputs = format!(
        "--registered {registered:?} {vanilla} --randomness {} --prover-id {}{partition}",
        hex(&s.randomness),
        hex(&s.prover_id)
    );
    let proof = a.out.join("proof.bin");
    println!("  cuzk prove {kind} {inputs} --out {}", proof.display());
    println!("  cuzk verify {kind} --proof {} {inputs}", proof.display());
    Ok(())
}
