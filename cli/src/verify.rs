//! `cuzk verify porep|snap|window-post|winning-post --proof FILE`: checks a proof file (what
//! `cuzk prove --out` or the daemon wrote) with filecoin-proofs' own verifier of its kind
//! (`verify_seal`, `verify_empty_sector_update_proof`, `verify_window_post`,
//! `verify_winning_post`), from the same inputs as `cuzk prove`. Exit 0 and a `valid` line when it
//! is accepted; an error naming the verifier, and a non-zero exit, when it is not.

use std::path::PathBuf;

use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::{params, verify, ProofKind, ProofRequest};

use crate::common::Result;
use crate::filecoin_args::Kind;

#[derive(clap::Args)]
pub struct Args {
    /// The proof to check: its bytes as written (192 per partition).
    #[arg(long, global = true)]
    proof: Option<PathBuf>,
    /// The parameter directory holding the verifying key (`.vk`) (default
    /// $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
    #[arg(
        long = "filecoin-params-dir",
        visible_alias = "params-dir",
        global = true
    )]
    params_dir: Option<PathBuf>,
    #[command(subcommand)]
    kind: Kind,
}

/// The filecoin-proofs function that verifies a proof of `kind`.
pub fn verifier(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PoRep => "verify_seal",
        ProofKind::SnapDeals => "verify_empty_sector_update_proof",
        ProofKind::WindowPoSt => "verify_window_post",
        ProofKind::WinningPoSt => "verify_winning_post",
    }
}

pub fn run(a: Args) -> Result<()> {
    let path = a
        .proof
        .ok_or("--proof FILE: the proof to verify is missing")?;
    let dir = params::dir(a.params_dir.as_deref());
    // filecoin-proofs reads its parameter cache (for the verifying key) from the environment.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    let req = a.kind.request()?;
    if let ProofRequest::PoRep {
        prover_id: None, ..
    }
    | ProofRequest::PoRep {
        sector_id: None, ..
    } = &req
    {
        return Err(
            "verify_seal needs the prover (--prover-id or --miner-id) and --sector-id".into(),
        );
    }
    let parsed: Parsed = req.parse()?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (registered, name) = (parsed.registered(), verifier(parsed.kind()));
    match verify::verify(&parsed, &bytes) {
        Ok(true) => {
            println!(
                "valid: {name} accepts {} as the {registered} proof of these inputs",
                path.display()
            );
            Ok(())
        }
        Ok(false) => Err(format!(
            "invalid: {name} rejects {} as the {registered} proof of these inputs",
            path.display()
        )
        .into()),
        Err(e @ cuzk_filecoin::FilecoinError::MissingParams { .. }) => {
            Err(format!("cannot run {name}: {e}").into())
        }
        Err(e) => Err(format!(
            "invalid: {name} refuses {} ({} bytes) as the {registered} proof of these inputs: {e}",
            path.display(),
            bytes.len()
        )
        .into()),
    }
}
