//! The setup's fixed-base products on the GPU (`gpu/fixed_base.rs`, `cuda-src/fixed_base.cu`)
//! against the CPU tables: random scalars and the edges (0, 1, −1, window edges), across a chunk
//! boundary; and whole parameter files from `setup::generate_seeded_on` byte-identical to the CPU
//! setup's for the same seed.

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_engine::circuits::{Bits, MulChain};
use cuzk_engine::fixed_base::FixedBase;
use cuzk_engine::gpu::{fixed_base, probe, GpuDevice};
use cuzk_engine::setup::{generate_seeded_on, SetupOn};
use ff::Field;
use group::Group;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn device() -> GpuDevice {
    probe().unwrap_or_else(|why| panic!("this test needs a CUDA GPU: {why}"));
    GpuDevice::open(0).expect("opening GPU 0")
}

fn rng() -> ChaCha20Rng {
    let seed = rand::thread_rng().next_u64();
    eprintln!("gpu_setup: seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

fn edges() -> Vec<Scalar> {
    vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(255u64),
        Scalar::from(256u64),
        Scalar::from(2u64).pow_vartime([248u64]),
        -Scalar::from(256u64),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn fixed_base_products_match_the_cpu_tables() {
    let dev = device();
    let mut rng = rng();
    let t1 = FixedBase::new(G1Projective::random(&mut rng));
    // Past one chunk, so the queue-next / convert-last pipeline runs more than once.
    let n = fixed_base::CHUNK + 1000;
    let mut ks: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    for (i, e) in edges().into_iter().enumerate() {
        ks[i] = e;
        ks[fixed_base::CHUNK + i] = e;
    }
    let got = fixed_base::mul_all_g1(&dev, &t1, &ks).unwrap();
    assert_eq!(got.len(), n);
    let want = t1.mul_all(&ks);
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!("G1 fixed-base product {i} differs from the CPU table's");
    }
    let t2 = FixedBase::new(G2Projective::random(&mut rng));
    let mut ks: Vec<Scalar> = (0..100_003).map(|_| Scalar::random(&mut rng)).collect();
    ks[..7].copy_from_slice(&edges());
    let got = fixed_base::mul_all_g2(&dev, &t2, &ks).unwrap();
    let want = t2.mul_all(&ks);
    if let Some(i) = (0..ks.len()).find(|&i| got[i] != want[i]) {
        panic!("G2 fixed-base product {i} differs from the CPU table's");
    }
    assert!(fixed_base::mul_all_g1(&dev, &t1, &[]).unwrap().is_empty());
}

fn params_bytes(p: &bellperson::groth16::Parameters<blstrs::Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn gpu_setup_is_byte_identical_to_the_cpu_setup() {
    let dev = device();
    let seed = rand::thread_rng().next_u64();
    eprintln!("gpu_setup: setup seed {seed}");
    let cpu = generate_seeded_on(MulChain::random(3000, 5, 1), seed, SetupOn::Cpu).unwrap();
    let gpu = generate_seeded_on(MulChain::random(3000, 5, 1), seed, SetupOn::Gpu(&dev)).unwrap();
    assert!(
        params_bytes(&cpu) == params_bytes(&gpu),
        "MulChain parameters differ"
    );
    let cpu = generate_seeded_on(Bits::random(500, 2), seed, SetupOn::Cpu).unwrap();
    let gpu = generate_seeded_on(Bits::random(500, 2), seed, SetupOn::Gpu(&dev)).unwrap();
    assert!(
        params_bytes(&cpu) == params_bytes(&gpu),
        "Bits parameters differ"
    );
}
