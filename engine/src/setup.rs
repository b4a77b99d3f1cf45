//! Parameters for custom circuits: generated with bellperson's `generate_random_parameters` (a
//! local, seeded setup — for development and custom circuits, not a trusted ceremony), written in
//! the Filecoin format, and reused from disk on the next run.

use std::path::Path;

use bellperson::groth16::{generate_random_parameters, Parameters};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk_srs::{write_params, OpenOptions, Srs};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::error::EngineError;

/// Runs bellperson's generator for `circuit` with an RNG seeded by `seed`.
pub fn generate<C: Circuit<Scalar>>(circuit: C, seed: u64) -> Result<Parameters<Bls12>, EngineError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).map_err(|source| EngineError::Synthesis { circuit: 0, source })
}

/// Opens the parameters at `path`, generating and writing them first if the file is absent.
/// Returns the opened set and whether it was generated now.
pub fn open_or_generate<C: Circuit<Scalar>>(path: &Path, circuit: C, seed: u64, opts: &OpenOptions) -> Result<(Srs, bool), EngineError> {
    if path.exists() {
        return Ok((Srs::open(path, opts)?, false));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::Other(format!("{}: {e}", dir.display())))?;
    }
    let params = generate(circuit, seed)?;
    write_params(path, &params)?;
    Ok((Srs::open(path, opts)?, true))
}
