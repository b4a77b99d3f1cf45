//! What the filecoin test binaries share: the parameter cache, the parameters of a proof kind
//! (generated there once by cuzk's seeded setup), and a sink that counts a request's circuits.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use blstrs::Scalar;
use cuzk_filecoin::{params, CircuitSink, Partitions, Registered};
use cuzk_srs::{OpenOptions, Srs};

/// The tests' parameter cache (and filecoin-proofs' verifiers', through the environment, which
/// filecoin-proofs reads once, on first use: it is set before anything of it runs).
pub fn param_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dir = tmp.join("filecoin-params");
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", tmp.join("filecoin-parents"));
        dir
    })
    .clone()
}

/// The parameters of `registered`, generated into the cache the first time (one generation at a
/// time per process; local setup, not the production parameters).
pub fn srs_for(registered: Registered) -> Srs {
    static GEN: Mutex<()> = Mutex::new(());
    let dir = param_dir();
    let _g = GEN.lock().unwrap_or_else(|e| e.into_inner());
    let (path, generated) = params::generate(registered, &dir, params::DEV_SETUP_SEED).unwrap();
    if generated {
        eprintln!(
            "generated {} (local setup, not the production parameters)",
            path.display()
        );
    }
    Srs::open(&path, &OpenOptions::default()).unwrap()
}

/// Counts the partitions and their public inputs.
pub struct Count;
impl CircuitSink for Count {
    type Out = (usize, Vec<usize>);
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Self::Out {
        (
            parts.circuits.len(),
            parts.public_inputs.iter().map(Vec::len).collect(),
        )
    }
}
