//! Fr, Fp and Fp2 arithmetic kernels against blstrs: add, sub, mul, square, negate on random
//! values and the edges 0, 1, −1 (p − 1), and Fr's Montgomery-to-canonical conversion.

mod gpu_util;

use blstrs::{Fp, Fp2, Scalar};
use cuzk_engine::gpu::device::grid;
use cuzk_engine::gpu::{as_bytes, as_bytes_mut, GpuDevice};
use ff::{Field, PrimeField};
use gpu_util::*;

/// Runs `kernel(out, a, b, threads, arg)` on `threads` threads; returns `out` (as long as `a`).
fn launch<T: Copy + Default>(
    dev: &GpuDevice,
    kernel: &str,
    a: &[T],
    b: &[T],
    threads: u64,
    arg: u32,
) -> Vec<T> {
    let da = dev.upload(as_bytes(a), "a").unwrap();
    let db = dev.upload(as_bytes(b), "b").unwrap();
    let out = dev.alloc(std::mem::size_of_val(a), "out").unwrap();
    let f = || -> cuzk_engine::gpu::Result<()> {
        cuzk_engine::gpu_launch!(
            dev,
            kernel,
            grid(threads, 128),
            &out.ptr(),
            &da.ptr(),
            &db.ptr(),
            &threads,
            &arg
        )
    };
    f().unwrap();
    let mut r = vec![T::default(); a.len()];
    dev.download(&out, 0, as_bytes_mut(&mut r), "out").unwrap();
    r
}

/// An element-wise arithmetic kernel (`arith_*`), op as in cuda-src/arith.cu.
fn run<T: Copy + Default>(dev: &GpuDevice, kernel: &str, a: &[T], b: &[T], op: u32) -> Vec<T> {
    launch(dev, kernel, a, b, a.len() as u64, op)
}

fn with_edges<T: Copy>(mut v: Vec<T>, edges: [T; 3]) -> Vec<T> {
    for (i, e) in edges.iter().enumerate() {
        v[i] = *e;
        let last = v.len() - 1 - i;
        v[last] = *e;
    }
    v
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn field_arithmetic_matches_blstrs() {
    let b = backend("field_arithmetic_matches_blstrs");
    let dev = b.device();
    let mut rng = rng("field_arithmetic_matches_blstrs");
    let n = 4099;

    let fa = with_edges(
        scalars(&mut rng, n),
        [Scalar::ZERO, Scalar::ONE, -Scalar::ONE],
    );
    let fb = with_edges(
        scalars(&mut rng, n),
        [-Scalar::ONE, Scalar::ZERO, -Scalar::ONE],
    );
    type Op<T> = fn(&T, &T) -> T;
    let fr_ops: [Op<Scalar>; 5] = [
        |x, y| x + y,
        |x, y| x - y,
        |x, y| x * y,
        |x, _| x.square(),
        |x, _| -x,
    ];
    for (op, f) in fr_ops.iter().enumerate() {
        let got = run(dev, "arith_fr", &fa, &fb, op as u32);
        for i in 0..n {
            assert_eq!(got[i], f(&fa[i], &fb[i]), "Fr op {op} at {i}");
        }
    }
    let canon = run(dev, "arith_fr", &fa, &fb, 5);
    for i in 0..n {
        let bytes: [u8; 32] = unsafe { std::mem::transmute(canon[i]) };
        assert_eq!(bytes, fa[i].to_repr(), "Fr from_mont at {i}");
    }

    let rp = |rng: &mut rand_chacha::ChaCha20Rng| Fp::random(&mut *rng);
    let pa = with_edges(
        (0..n).map(|_| rp(&mut rng)).collect(),
        [Fp::ZERO, Fp::ONE, -Fp::ONE],
    );
    let pb = with_edges(
        (0..n).map(|_| rp(&mut rng)).collect(),
        [-Fp::ONE, Fp::ZERO, -Fp::ONE],
    );
    let fp_ops: [Op<Fp>; 5] = [
        |x, y| x + y,
        |x, y| x - y,
        |x, y| x * y,
        |x, _| x.square(),
        |x, _| -x,
    ];
    for (op, f) in fp_ops.iter().enumerate() {
        let got = run(dev, "arith_fp", &pa, &pb, op as u32);
        for i in 0..n {
            assert_eq!(got[i], f(&pa[i], &pb[i]), "Fp op {op} at {i}");
        }
    }

    let qa: Vec<Fp2> = (0..n).map(|i| Fp2::new(pa[i], pb[n - 1 - i])).collect();
    let qb: Vec<Fp2> = (0..n).map(|i| Fp2::new(pb[i], pa[(i * 7) % n])).collect();
    let fp2_ops: [Op<Fp2>; 5] = [
        |x, y| x + y,
        |x, y| x - y,
        |x, y| x * y,
        |x, _| x.square(),
        |x, _| -x,
    ];
    for (op, f) in fp2_ops.iter().enumerate() {
        let got = run(dev, "arith_fp2", &qa, &qb, op as u32);
        for i in 0..n {
            assert_eq!(got[i], f(&qa[i], &qb[i]), "Fp2 op {op} at {i}");
        }
    }
}

/// The product-throughput kernels of `cuzk bench kernels` (K chains x <- x·y a thread) give
/// x·y^rounds, for Fr (the 32-bit product, the FP64-pipe one and the two mixed) and Fp, one and
/// four chains.
#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make test-gpu`, or tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn product_chains_match_blstrs() {
    let b = backend("product_chains_match_blstrs");
    let dev = b.device();
    let mut rng = rng("product_chains_match_blstrs");
    let (n, rounds) = (300u64, 7u32);
    for k in [1usize, 4] {
        let fa = with_edges(
            scalars(&mut rng, k * n as usize),
            [Scalar::ZERO, Scalar::ONE, -Scalar::ONE],
        );
        let fb = with_edges(
            scalars(&mut rng, n as usize),
            [-Scalar::ONE, Scalar::ONE, -Scalar::ONE],
        );
        // The 32-bit product, the FP64-pipe one (fr52.cuh), and two chains of each a thread.
        let names: &[&str] = if k == 1 {
            &["fr", "fr52"]
        } else {
            &["fr", "fr52", "frmix"]
        };
        for name in names {
            let got = launch(dev, &format!("mul_chains_{name}_x{k}"), &fa, &fb, n, rounds);
            for (j, g) in got.iter().enumerate() {
                assert_eq!(
                    *g,
                    fa[j] * fb[j / k].pow_vartime([rounds as u64]),
                    "{name}, {k} chains, element {j}"
                );
            }
        }
        let pa = with_edges(
            (0..k * n as usize).map(|_| Fp::random(&mut rng)).collect(),
            [Fp::ZERO, Fp::ONE, -Fp::ONE],
        );
        let pb = with_edges(
            (0..n as usize).map(|_| Fp::random(&mut rng)).collect(),
            [-Fp::ONE, Fp::ONE, -Fp::ONE],
        );
        let got = launch(dev, &format!("mul_chains_fp_x{k}"), &pa, &pb, n, rounds);
        for (j, g) in got.iter().enumerate() {
            assert_eq!(
                *g,
                pa[j] * pb[j / k].pow_vartime([rounds as u64]),
                "Fp, {k} chains, element {j}"
            );
        }
    }
}
