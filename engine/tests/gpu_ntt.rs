//! NTT and the fused H step on the GPU against bellperson's EvaluationDomain on the CPU, on fresh
//! random inputs for every domain size from 2^0 to 2^12 and a few multi-pass sizes up to 2^19.

mod gpu_util;

use bellperson::domain::EvaluationDomain;
use blstrs::Scalar;
use cuzk_engine::backend::Backend;
use cuzk_engine::gpu::ntt::{ntt_natural, twiddles};
use cuzk_engine::gpu::{as_bytes, as_bytes_mut};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use gpu_util::*;

fn cpu_fft(v: Vec<Scalar>, inverse: bool) -> Vec<Scalar> {
    let worker = Worker::new();
    let mut d = EvaluationDomain::from_coeffs(v).expect("domain");
    if inverse {
        d.ifft(&worker, &mut None).expect("cpu ifft");
    } else {
        d.fft(&worker, &mut None).expect("cpu fft");
    }
    d.into_coeffs()
}

fn cpu_h(a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Vec<Scalar> {
    let n = a.len();
    let worker = Worker::new();
    let mut a = EvaluationDomain::from_coeffs(a).unwrap();
    let mut b = EvaluationDomain::from_coeffs(b).unwrap();
    let mut c = EvaluationDomain::from_coeffs(c).unwrap();
    for d in [&mut a, &mut b, &mut c] {
        d.ifft(&worker, &mut None).unwrap();
        d.coset_fft(&worker, &mut None).unwrap();
    }
    a.mul_assign(&worker, &b);
    a.sub_assign(&worker, &c);
    a.divide_by_z_on_coset(&worker);
    a.icoset_fft(&worker, &mut None).unwrap();
    let mut h = a.into_coeffs();
    h.truncate(n - 1);
    h
}

const SIZES: [u32; 17] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 18, 19, 10];

#[test]
fn ntt_forward_and_inverse_match_cpu() {
    let Some(b) = backend("ntt_forward_and_inverse_match_cpu") else { return };
    let mut rng = rng("ntt_forward_and_inverse_match_cpu");
    let dev = b.device();
    for log_n in SIZES {
        let n = 1usize << log_n;
        let tw = twiddles(dev, log_n).unwrap();
        for inverse in [false, true] {
            let v = scalars(&mut rng, n);
            let data = dev.upload(as_bytes(&v), "test input").unwrap();
            let out = dev.alloc(32 * n, "test output").unwrap();
            ntt_natural(dev, data.ptr(), out.ptr(), &tw, log_n, inverse).unwrap();
            let mut got = vec![Scalar::ZERO; n];
            dev.download(&out, 0, as_bytes_mut(&mut got), "test output").unwrap();
            let mut want = cpu_fft(v, inverse);
            if inverse {
                // bellperson's ifft scales by 1/n; the raw kernel does not.
                let scale = Scalar::from(n as u64);
                want.iter_mut().for_each(|x| *x *= scale);
            }
            assert!(got == want, "NTT 2^{log_n} (inverse: {inverse}) differs from the CPU");
        }
    }
}

#[test]
fn compute_h_matches_cpu() {
    let Some(b) = backend("compute_h_matches_cpu") else { return };
    let mut rng = rng("compute_h_matches_cpu");
    for log_n in SIZES {
        let n = 1usize << log_n;
        let (a, bb, c) = (scalars(&mut rng, n), scalars(&mut rng, n), scalars(&mut rng, n));
        let got = b.compute_h(a.clone(), bb.clone(), c.clone()).unwrap();
        if n == 1 {
            assert!(got.is_empty());
            continue;
        }
        let want = cpu_h(a, bb, c);
        assert_eq!(got.len(), n - 1);
        assert!(got == want, "H over 2^{log_n} differs from the CPU");
    }
}

#[test]
fn compute_h_of_a_satisfied_system_has_zero_remainder() {
    // a·b = c everywhere (zero-padded like a real circuit): H·Z = a·b − c exactly.
    let Some(b) = backend("compute_h_of_a_satisfied_system_has_zero_remainder") else { return };
    let mut rng = rng("compute_h_of_a_satisfied_system_has_zero_remainder");
    let n = 1 << 14;
    let mut a = scalars(&mut rng, n);
    let mut bb = scalars(&mut rng, n);
    for i in 10_000..n {
        a[i] = Scalar::ZERO;
        bb[i] = Scalar::ZERO;
    }
    let c: Vec<Scalar> = a.iter().zip(&bb).map(|(x, y)| x * y).collect();
    let got = b.compute_h(a.clone(), bb.clone(), c.clone()).unwrap();
    assert!(got == cpu_h(a, bb, c));
}

#[test]
fn compute_h_rejects_bad_shapes() {
    let Some(b) = backend("compute_h_rejects_bad_shapes") else { return };
    let v = vec![Scalar::ONE; 3];
    assert!(b.compute_h(v.clone(), v.clone(), v).is_err());
    assert!(b.compute_h(vec![Scalar::ONE; 4], vec![Scalar::ONE; 4], vec![Scalar::ONE; 2]).is_err());
}
