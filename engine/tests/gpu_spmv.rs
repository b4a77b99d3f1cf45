//! The recorded products on the GPU (`gpu::spmv`, cuda-src/spmv.cu) against the CPU's, on the
//! example circuits: matrices resident, witness uploaded, a, b, c zero-padded to the domain; the
//! device row check against the host's on a satisfied and a wrong witness; the MSM scalar
//! splits built on the device from the uploaded witness against the host's `prover::splits`.

mod gpu_util;

use blstrs::Scalar;
use cuzk_engine::circuits::Example;
use cuzk_engine::gpu::as_bytes_mut;
use cuzk_engine::gpu::spmv::DeviceRecording;
use cuzk_engine::recorded::record;
use ff::Field;
use gpu_util::*;

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn recorded_products_match_the_cpu() {
    let b = backend("recorded_products_match_the_cpu");
    let dev = b.device();
    for (name, size) in [
        ("mulchain", 16),
        ("sha256", 64),
        ("bits", 8),
        ("c-only", 100),
        ("many-inputs", 40),
        ("no-aux", 0),
    ] {
        let (rec, values) = record(Example::new(name, size, 1).unwrap(), true, 0).unwrap();
        let (inputs, aux) = values.unwrap();
        let asg = rec.assignment((inputs.clone(), aux.clone()), 0).unwrap();
        let d = DeviceRecording::upload(dev, &rec).unwrap();
        let w = d.upload_witness(dev, &inputs, &aux).unwrap();
        let n = rec.counts().rows().next_power_of_two();
        let out = d.products(dev, &w, n).unwrap();
        for (m, want) in [&asg.a, &asg.b, &asg.c].into_iter().enumerate() {
            let mut got = vec![Scalar::ZERO; n];
            dev.download(&out[m], 0, as_bytes_mut(&mut got), "products")
                .unwrap();
            let mut want = want.clone();
            want.resize(n, Scalar::ZERO);
            assert!(
                got == want,
                "{name}: matrix {m} differs from the CPU's (first at {:?})",
                (0..n).find(|&i| got[i] != want[i])
            );
        }
        assert_eq!(
            d.first_unsatisfied(dev, &out).unwrap(),
            None,
            "{name}: satisfied"
        );
        // A wrong witness value: the device row check names the row the host check names.
        let mut bad = aux.clone();
        if let Some(v) = bad.last_mut() {
            *v += Scalar::ONE;
            let wrong = rec.assignment((inputs.clone(), bad.clone()), 0).unwrap();
            let w = d.upload_witness(dev, &inputs, &bad).unwrap();
            let out = d.products(dev, &w, n).unwrap();
            assert_eq!(
                d.first_unsatisfied(dev, &out).unwrap(),
                wrong.first_unsatisfied(),
                "{name}: first unsatisfied row"
            );
        }
        assert!(
            d.upload_witness(dev, &inputs[1..], &aux).is_err(),
            "{name}: a short witness is refused"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn recorded_splits_match_the_host() {
    use cuzk_engine::prover::splits;
    use rand::{Rng, SeedableRng};
    let b = backend("recorded_splits_match_the_host");
    let dev = b.device();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
    for (name, size) in [
        ("mulchain", 16),
        ("sha256", 64),
        ("bits", 8),
        ("bits", 64),
        ("c-only", 100),
        ("many-inputs", 40),
        ("no-aux", 0),
    ] {
        let (rec, values) = record(Example::new(name, size, 1).unwrap(), true, 0).unwrap();
        let (inputs, aux) = values.unwrap();
        let d = DeviceRecording::upload(dev, &rec).unwrap();
        // The circuit's own witness, then values drawn from {0, 1, -1, random} (a split does not
        // need a satisfied witness).
        for random in [false, true] {
            let mut pick = || match rng.gen_range(0..4) {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => -Scalar::ONE,
                _ => Scalar::random(&mut rng),
            };
            let (inputs, aux) = if random {
                let mut i: Vec<Scalar> = inputs.iter().map(|_| pick()).collect();
                i[0] = Scalar::ONE;
                let a: Vec<Scalar> = aux.iter().map(|_| pick()).collect();
                (i, a)
            } else {
                (inputs.clone(), aux.clone())
            };
            let [a_aux, b_in, b_aux] = rec.densities();
            let want = splits(&inputs, aux.clone(), [&a_aux, &b_in, &b_aux]);
            let w = d.upload_witness(dev, &inputs, &aux).unwrap();
            let got = d.splits(dev, &w).unwrap();
            for (g, (want, which)) in
                got.iter()
                    .zip([(&want.0, "l"), (&want.1, "a"), (&want.2, "b")])
            {
                let what = format!("{name} {size} (random {random}): split {which}");
                assert_eq!(g.n as usize, want.tail.len(), "{what}: length");
                let mut tail = vec![Scalar::ZERO; want.tail.len()];
                dev.download(&g.tail, 0, as_bytes_mut(&mut tail), "tail")
                    .unwrap();
                assert!(tail == want.tail, "{what}: tails differ");
                let mut ones = vec![0u64; want.ones.words().len()];
                let bits = g
                    .ones
                    .as_ref()
                    .expect("a device split always has its bitmap");
                dev.download(bits, 0, as_bytes_mut(&mut ones), "ones")
                    .unwrap();
                assert_eq!(ones, want.ones.words(), "{what}: one-bitmaps differ");
            }
        }
    }
}
