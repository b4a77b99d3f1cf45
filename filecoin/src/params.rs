//! Parameter files: where a node keeps them, which file a registered proof needs, the
//! verifying-key file filecoin-proofs' verifiers read beside it, and — for development and
//! tests only — a local seeded setup in the standard format (not the production MPC parameters).
//!
//! [`dir`] follows filecoin-proofs' rule (`FIL_PROOFS_PARAMETER_CACHE`); [`locate`] names the
//! expected file and directory when it is missing; [`ensure_vk`] writes the `.vk` the verifiers
//! read; [`generate`] / [`generate_on`] run cuzk's seeded setup into the standard names, and
//! [`generate_in_memory`] writes only the `.vk` and keeps the parameters in memory.

use std::path::{Path, PathBuf};

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_engine::setup::SetupOn;
use cuzk_srs::{write_params, Srs};

use crate::error::FilecoinError;
use crate::registered::Registered;
use crate::sink::BlankSink;

pub use crate::compound::blank;

/// The default directory of Filecoin parameters.
pub const DEFAULT_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// The parameter directory: `explicit`, else `$FIL_PROOFS_PARAMETER_CACHE`, else [`DEFAULT_DIR`]
/// (the same rule filecoin-proofs follows).
pub fn dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// The `.params` file `registered` is proved against, in `dir`; an error naming the expected file
/// and directory if it is not there.
pub fn locate(registered: Registered, dir: &Path) -> Result<PathBuf, FilecoinError> {
    let file = registered.params_file_name()?;
    let path = dir.join(&file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(FilecoinError::MissingParams {
            proof: registered.to_string(),
            file,
            dir: dir.to_path_buf(),
        })
    }
}

/// Writes the verifying key of `srs` as `registered`'s `.vk` file in `dir` unless one is there;
/// filecoin-proofs' verifiers read it (and, finding none, would run a setup of their own).
pub fn ensure_vk(registered: Registered, dir: &Path, srs: &Srs) -> Result<PathBuf, FilecoinError> {
    let path = dir.join(registered.vk_file_name()?);
    if path.is_file() {
        return Ok(path);
    }
    let err = |e: std::io::Error| FilecoinError::Params {
        file: path.clone(),
        detail: e.to_string(),
    };
    let mut bytes = Vec::new();
    srs.vk().write(&mut bytes).map_err(err)?;
    write_atomically(&path, &bytes).map_err(err)?;
    Ok(path)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Generates parameters for `registered` with cuzk's seeded local setup into its standard file
/// name in `dir` (unless present), and the `.vk` beside it. These are **not** the production
/// parameters of Filecoin's trusted setup: proofs made with them verify only against them.
/// Returns the path and whether it was generated now.
pub fn generate(
    registered: Registered,
    dir: &Path,
    seed: u64,
) -> Result<(PathBuf, bool), FilecoinError> {
    generate_on(registered, dir, seed, SetupOn::Cpu)
}

/// [`generate`], the setup's products computed `on` the CPU or a GPU (the same file either way).
pub fn generate_on(
    registered: Registered,
    dir: &Path,
    seed: u64,
    on: SetupOn<'_>,
) -> Result<(PathBuf, bool), FilecoinError> {
    let path = dir.join(registered.params_file_name()?);
    let generated = if path.is_file() {
        false
    } else {
        std::fs::create_dir_all(dir).map_err(|e| FilecoinError::Params {
            file: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        let params = blank(registered, Setup { seed, on })??;
        let tmp = path.with_extension(format!("params.tmp.{}", std::process::id()));
        write_params(&tmp, &params).map_err(|e| FilecoinError::Params {
            file: tmp.clone(),
            detail: e.to_string(),
        })?;
        std::fs::rename(&tmp, &path).map_err(|e| FilecoinError::Params {
            file: path.clone(),
            detail: e.to_string(),
        })?;
        true
    };
    let srs =
        Srs::open(&path, &cuzk_srs::OpenOptions::default()).map_err(|e| FilecoinError::Params {
            file: path.clone(),
            detail: e.to_string(),
        })?;
    ensure_vk(registered, dir, &srs)?;
    Ok((path, generated))
}

/// Generates parameters for `registered` with cuzk's seeded setup straight into memory: no
/// `.params` file and no decode cache on disk (a 32 GiB PoRep set is ~47 GB, which a host's
/// disk may not hold twice). Only the small `.vk` file is written to `dir` (filecoin-proofs'
/// verifiers read it); an existing `.vk` must be this set's, else it is an error. Returns the
/// parameters and the path they stand for (where their file would be), for
/// `Engine::install_srs`.
pub fn generate_in_memory(
    registered: Registered,
    dir: &Path,
    seed: u64,
    on: SetupOn<'_>,
) -> Result<(Srs, PathBuf), FilecoinError> {
    let path = dir.join(registered.params_file_name()?);
    std::fs::create_dir_all(dir).map_err(|e| FilecoinError::Params {
        file: dir.to_path_buf(),
        detail: e.to_string(),
    })?;
    let srs = Srs::from_owned(blank(registered, Setup { seed, on })??);
    let vk = ensure_vk(registered, dir, &srs)?;
    let mut ours = Vec::new();
    srs.vk()
        .write(&mut ours)
        .map_err(|e| FilecoinError::Params {
            file: vk.clone(),
            detail: e.to_string(),
        })?;
    let theirs = std::fs::read(&vk).map_err(|e| FilecoinError::Params {
        file: vk.clone(),
        detail: e.to_string(),
    })?;
    if ours != theirs {
        return Err(FilecoinError::Params {
            file: vk,
            detail: format!(
                "this verifying key belongs to other parameters than the ones just set up \
                 (seed {seed}); move it away to verify against the new ones"
            ),
        });
    }
    Ok((srs, path))
}

struct Setup<'a> {
    seed: u64,
    on: SetupOn<'a>,
}

impl BlankSink for Setup<'_> {
    type Out = Result<bellperson::groth16::Parameters<blstrs::Bls12>, FilecoinError>;
    fn take<C: Circuit<Scalar> + Clone + Send + 'static>(self, blank: C) -> Self::Out {
        Ok(cuzk_engine::setup::generate_seeded_on(
            blank, self.seed, self.on,
        )?)
    }
}

/// The seed cuzk's own tests, benches and `cuzk filecoin setup` use by default, so that each of
/// them finds the files the others generated.
pub const DEV_SETUP_SEED: u64 = 0x00c0_2a2b;
