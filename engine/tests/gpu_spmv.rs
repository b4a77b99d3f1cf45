//! The recorded products on the GPU (`gpu::spmv`, cuda-src/spmv.cu) against the CPU's, on the
//! example circuits: matrices resident, witness uploaded, a, b, c zero-padded to the domain; the
//! device row check against the host's on a satisfied and a wrong witness.

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
