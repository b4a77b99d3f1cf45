//! The Filecoin proof kinds as command-line arguments (shared by `cuzk prove` and `cuzk ctl
//! prove`): the input files a node's pipelines write, turned into a `ProofRequest`.

use std::path::PathBuf;

use cuzk_filecoin::request::{hex32, prover_id_of_miner};
use cuzk_filecoin::{registered, ProofKind, ProofRequest, Registered};

use crate::common::Result;

#[derive(clap::Subcommand, Clone)]
pub enum Kind {
    /// PoRep C2 from a C1 output (`SealCommitPhase1Output` JSON).
    Porep {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        who: Who,
        /// The sector number (with a prover id: also run filecoin-proofs' verify_seal).
        #[arg(long)]
        sector_id: Option<u64>,
    },
    /// SnapDeals from its vanilla partition proofs (bincode `PartitionProof`, one file each).
    Snap {
        /// The registered update proof: name (StackedDrg2KiBV1) or abi number (0–4).
        #[arg(long)]
        registered: String,
        #[arg(long = "vanilla", required = true)]
        vanilla: Vec<PathBuf>,
        #[arg(long)]
        comm_r_old: String,
        #[arg(long)]
        comm_r_new: String,
        #[arg(long)]
        comm_d_new: String,
    },
    /// One WindowPoSt partition from its sectors' vanilla proofs (bincode
    /// `FallbackPoStSectorProof`, one file per sector, in sector order).
    WindowPost {
        /// The registered PoSt proof: name (StackedDrgWindow32GiBV1_2) or abi number (5–14).
        #[arg(long)]
        registered: String,
        #[arg(long = "vanilla", required = true)]
        vanilla: Vec<PathBuf>,
        /// 64 hex digits (masked: randomness[31] &= 0x3f).
        #[arg(long)]
        randomness: String,
        #[command(flatten)]
        who: Who,
        #[arg(long, default_value_t = 0)]
        partition: u64,
    },
    /// WinningPoSt from its sector's vanilla proof.
    WinningPost {
        /// The registered PoSt proof: name (StackedDrgWinning32GiBV1) or abi number (0–4).
        #[arg(long)]
        registered: String,
        #[arg(long = "vanilla", required = true)]
        vanilla: Vec<PathBuf>,
        #[arg(long)]
        randomness: String,
        #[command(flatten)]
        who: Who,
    },
}

/// The prover: a prover id, or the miner actor id it derives from.
#[derive(clap::Args, Clone)]
pub struct Who {
    /// The prover id, 64 hex digits.
    #[arg(long, conflicts_with = "miner_id")]
    prover_id: Option<String>,
    /// The miner actor id (f0<ID>), from which the prover id derives.
    #[arg(long)]
    miner_id: Option<u64>,
}

impl Who {
    fn get(&self) -> Result<Option<[u8; 32]>> {
        Ok(match (&self.prover_id, self.miner_id) {
            (Some(h), _) => Some(hex32("prover id", h)?),
            (None, Some(m)) => Some(prover_id_of_miner(m)),
            (None, None) => None,
        })
    }
    fn required(&self) -> Result<[u8; 32]> {
        self.get()?
            .ok_or_else(|| "a PoSt needs --prover-id or --miner-id".into())
    }
}

fn read(p: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()).into())
}

fn abi(kind: ProofKind, s: &str) -> Result<u64> {
    Ok(registered::parse(kind, s).map(Registered::abi)?)
}

fn masked(what: &str, s: &str) -> Result<[u8; 32]> {
    let mut r = hex32(what, s)?;
    r[31] &= 0x3f;
    Ok(r)
}

impl Kind {
    pub fn request(&self) -> Result<ProofRequest> {
        Ok(match self {
            Kind::Porep { c1, who, sector_id } => ProofRequest::PoRep {
                c1_json: read(c1)?,
                prover_id: who.get()?,
                sector_id: *sector_id,
            },
            Kind::Snap {
                registered,
                vanilla,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            } => ProofRequest::SnapDeals {
                registered: abi(ProofKind::SnapDeals, registered)?,
                vanilla_proofs: vanilla.iter().map(read).collect::<Result<_>>()?,
                comm_r_old: hex32("comm_r_old", comm_r_old)?,
                comm_r_new: hex32("comm_r_new", comm_r_new)?,
                comm_d_new: hex32("comm_d_new", comm_d_new)?,
            },
            Kind::WindowPost {
                registered,
                vanilla,
                randomness,
                who,
                partition,
            } => ProofRequest::WindowPoSt {
                registered: abi(ProofKind::WindowPoSt, registered)?,
                vanilla_proofs: vanilla.iter().map(read).collect::<Result<_>>()?,
                randomness: masked("randomness", randomness)?,
                prover_id: who.required()?,
                partition_index: *partition,
            },
            Kind::WinningPost {
                registered,
                vanilla,
                randomness,
                who,
            } => ProofRequest::WinningPoSt {
                registered: abi(ProofKind::WinningPoSt, registered)?,
                vanilla_proofs: vanilla.iter().map(read).collect::<Result<_>>()?,
                randomness: masked("randomness", randomness)?,
                prover_id: who.required()?,
            },
        })
    }
}
