//! NTT and the fused H step on the GPU against bellperson's EvaluationDomain on the CPU, on fresh
//! random inputs for every domain size from 2^0 to 2^12 and a few multi-pass sizes up to 2^21,
//! with both pass kernels (v1 `ntt_pass`, v2 `ntt_pass_v2`); and v2 against v1 on the GPU, byte
//! for byte, up to 2^27.

mod gpu_util;

use bellperson::domain::EvaluationDomain;
use blstrs::Scalar;
use cuzk_engine::backend::Backend;
use cuzk_engine::gpu::ntt::{ntt_in_place_with, ntt_natural_with, twiddles, NttKernel};
use cuzk_engine::gpu::{as_bytes, as_bytes_mut};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use gpu_util::*;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

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

/// Three-pass sizes for the NTT check: 2^20 and 2^21 (v2 runs them at run time), 2^22 and 2^23
/// (v2's radix-8 path in one and two of the three passes; 2^17 and 2^18 above have it in both).
const NTT_EXTRA_SIZES: [u32; 4] = [20, 21, 22, 23];

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn ntt_forward_and_inverse_match_cpu() {
    let b = backend("ntt_forward_and_inverse_match_cpu");
    let mut rng = rng("ntt_forward_and_inverse_match_cpu");
    let dev = b.device();
    for log_n in SIZES.into_iter().chain(NTT_EXTRA_SIZES) {
        let n = 1usize << log_n;
        let tw = twiddles(dev, log_n).unwrap();
        for inverse in [false, true] {
            let v = scalars(&mut rng, n);
            let mut want = cpu_fft(v.clone(), inverse);
            if inverse {
                // bellperson's ifft scales by 1/n; the raw kernel does not.
                let scale = Scalar::from(n as u64);
                want.iter_mut().for_each(|x| *x *= scale);
            }
            for kernel in NttKernel::ALL {
                let data = dev.upload(as_bytes(&v), "test input").unwrap();
                let out = dev.alloc(32 * n, "test output").unwrap();
                ntt_natural_with(dev, data.ptr(), out.ptr(), &tw, log_n, inverse, kernel).unwrap();
                let mut got = vec![Scalar::ZERO; n];
                dev.download(&out, 0, as_bytes_mut(&mut got), "test output")
                    .unwrap();
                assert!(
                    got == want,
                    "NTT 2^{log_n} (inverse: {inverse}, kernel {}) differs from the CPU",
                    kernel.name()
                );
            }
        }
    }
}

/// Random valid scalars (below 2^254 < r, Montgomery form as they are), generated in parallel.
fn fast_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng =
                ChaCha20Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut limbs = vec![0u64; 4 * chunk.len()];
            limbs.iter_mut().for_each(|l| *l = rng.next_u64());
            for (k, l) in limbs.chunks_mut(4).enumerate() {
                l[3] &= (1 << 62) - 1;
                as_bytes_mut(&mut chunk[k..k + 1]).copy_from_slice(as_bytes(l));
            }
        });
    v
}

/// v2 against v1 on the GPU, in place, DIF and DIT, forward and inverse, on the same random
/// input: the outputs must be the same bytes. Every size to 2^21, then 2^24 and 2^27 (the
/// radix-8 passes with blocks of 2^9 and 2^10; 2^27 needs 10 GiB of device memory).
#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn ntt_v2_matches_v1_on_the_gpu() {
    let b = backend("ntt_v2_matches_v1_on_the_gpu");
    let mut rng = rng("ntt_v2_matches_v1_on_the_gpu");
    let dev = b.device();
    for log_n in (0..=21u32).chain([24, 27]) {
        let n = 1usize << log_n;
        let tw = twiddles(dev, log_n).unwrap();
        let v = fast_scalars(n, rng.next_u64());
        for dif in [true, false] {
            for inverse in [false, true] {
                let x1 = dev.upload(as_bytes(&v), "test input (v1)").unwrap();
                let x2 = dev.upload(as_bytes(&v), "test input (v2)").unwrap();
                ntt_in_place_with(dev, x1.ptr(), &tw, log_n, dif, inverse, NttKernel::V1).unwrap();
                ntt_in_place_with(dev, x2.ptr(), &tw, log_n, dif, inverse, NttKernel::V2).unwrap();
                // Compare in pieces of 2^23 elements (256 MiB).
                let piece = n.min(1 << 23);
                let (mut a, mut c) = (vec![0u8; 32 * piece], vec![0u8; 32 * piece]);
                for off in (0..n).step_by(piece) {
                    dev.download(&x1, 32 * off, &mut a, "v1 output").unwrap();
                    dev.download(&x2, 32 * off, &mut c, "v2 output").unwrap();
                    if a != c {
                        let first = a
                            .chunks(32)
                            .zip(c.chunks(32))
                            .position(|(p, q)| p != q)
                            .unwrap();
                        panic!("2^{log_n} dif {dif} inverse {inverse}: v2 differs from v1 first at element {}", off + first);
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn compute_h_matches_cpu() {
    let b = backend("compute_h_matches_cpu");
    let mut rng = rng("compute_h_matches_cpu");
    for log_n in SIZES {
        let n = 1usize << log_n;
        let (a, bb, c) = (
            scalars(&mut rng, n),
            scalars(&mut rng, n),
            scalars(&mut rng, n),
        );
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
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn compute_h_of_a_satisfied_system_has_zero_remainder() {
    // a·b = c everywhere (zero-padded like a real circuit): H·Z = a·b − c exactly.
    let b = backend("compute_h_of_a_satisfied_system_has_zero_remainder");
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
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn compute_h_rejects_bad_shapes() {
    let b = backend("compute_h_rejects_bad_shapes");
    let v = vec![Scalar::ONE; 3];
    assert!(b.compute_h(v.clone(), v.clone(), v).is_err());
    assert!(b
        .compute_h(
            vec![Scalar::ONE; 4],
            vec![Scalar::ONE; 4],
            vec![Scalar::ONE; 2]
        )
        .is_err());
}
