//! Helpers shared by the end-to-end tests: parameters for a circuit, and the bellperson side of a
//! side-by-side comparison.

use std::path::Path;

use bellperson::groth16::{create_proof, generate_random_parameters, Parameters, Proof};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk_srs::{write_params, CacheMode, OpenOptions, Srs};
use rand::SeedableRng;

/// bellperson's own generator, seeded (the reference the fast setup is checked against).
pub fn bellperson_params<C: Circuit<Scalar>>(circuit: C, seed: u64) -> Parameters<Bls12> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    generate_random_parameters::<Bls12, _, _>(circuit, &mut rng)
        .expect("bellperson parameter generation")
}

/// Generates parameters for `circuit` with bellperson, writes them with cuzk-srs into `dir`, and
/// opens them through the decode cache. Returns bellperson's in-memory parameters too.
pub fn params_in<C: Circuit<Scalar>>(
    dir: &Path,
    name: &str,
    circuit: C,
) -> (Parameters<Bls12>, Srs) {
    let params = bellperson_params(circuit, 42);
    let path = dir.join(format!("{name}.params"));
    write_params(&path, &params).expect("write params");
    let srs = Srs::open(
        &path,
        &OpenOptions {
            subgroup_check: true,
            cache: CacheMode::Dir(dir.join("cache")),
        },
    )
    .expect("open params");
    (params, srs)
}

pub fn bellperson_proof<C: Circuit<Scalar> + Send>(
    circuit: C,
    params: &Parameters<Bls12>,
    r: Scalar,
    s: Scalar,
) -> Proof<Bls12> {
    create_proof::<Bls12, _, _>(circuit, params, r, s).expect("bellperson create_proof")
}

pub fn proof_bytes(p: &Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).expect("write proof");
    v
}
