//! Radix-2 FFT over Fr on the CPU (rayon), and the H step built on it.
//!
//! The domain of size `n = 2^k` uses `ω = ROOT_OF_UNITY^(2^(S−k))`; the coset is `g·⟨ω⟩` with
//! `g = 7` (Fr's multiplicative generator), on which `Z(x) = x^n − 1` is the constant `g^n − 1`.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Twiddles and constants of one domain size.
pub struct Domain {
    pub n: usize,
    pub log_n: u32,
    /// `ω^k` for `k < n/2`.
    fwd: Vec<Scalar>,
    /// `ω^−k` for `k < n/2`.
    inv: Vec<Scalar>,
    n_inv: Scalar,
    g: Scalar,
    g_inv: Scalar,
    /// `1 / (g^n − 1)`.
    z_inv: Scalar,
}

impl Domain {
    /// `n` must be a power of two no larger than `2^S`.
    pub fn new(n: usize) -> Option<Domain> {
        if !n.is_power_of_two() {
            return None;
        }
        let log_n = n.trailing_zeros();
        if log_n > Scalar::S {
            return None;
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let omega_inv = Option::<Scalar>::from(omega.invert())?;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let z_inv = Option::<Scalar>::from((g.pow_vartime([n as u64]) - Scalar::ONE).invert())?;
        Some(Domain {
            n,
            log_n,
            fwd: powers(omega, n / 2),
            inv: powers(omega_inv, n / 2),
            n_inv: Option::<Scalar>::from(Scalar::from(n as u64).invert())?,
            g,
            g_inv: Option::<Scalar>::from(g.invert())?,
            z_inv,
        })
    }

    pub fn fft(&self, v: &mut [Scalar]) {
        transform(v, &self.fwd);
    }

    pub fn ifft(&self, v: &mut [Scalar]) {
        transform(v, &self.inv);
        scale(v, self.n_inv);
    }

    /// Evaluations on the coset `g·⟨ω⟩` of the polynomial with coefficients `v`.
    pub fn coset_fft(&self, v: &mut [Scalar]) {
        distribute_powers(v, Scalar::ONE, self.g);
        transform(v, &self.fwd);
    }

    /// Coefficients from evaluations on the coset.
    pub fn icoset_fft(&self, v: &mut [Scalar]) {
        transform(v, &self.inv);
        distribute_powers(v, self.n_inv, self.g_inv);
    }

    /// `iFFT → coset FFT` of each of a, b, c; `(a·b − c)/Z`; `coset iFFT`; first `n − 1` coefficients.
    pub fn h_coefficients(
        &self,
        mut a: Vec<Scalar>,
        mut b: Vec<Scalar>,
        mut c: Vec<Scalar>,
    ) -> Vec<Scalar> {
        for v in [&mut a, &mut b, &mut c] {
            v.resize(self.n, Scalar::ZERO);
            transform(v, &self.inv);
            // iFFT's 1/n and the coset's g^i in one pass.
            distribute_powers(v, self.n_inv, self.g);
            transform(v, &self.fwd);
        }
        let z_inv = self.z_inv;
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .with_min_len(1 << 12)
            .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
        drop((b, c));
        self.icoset_fft(&mut a);
        a.truncate(self.n - 1);
        a
    }
}

fn powers(base: Scalar, count: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; count];
    distribute_from(&mut out, Scalar::ONE, base, |slot, p| *slot = p);
    out
}

fn scale(v: &mut [Scalar], k: Scalar) {
    v.par_iter_mut().with_min_len(1 << 12).for_each(|x| *x *= k);
}

/// `v[i] *= start · base^i`.
fn distribute_powers(v: &mut [Scalar], start: Scalar, base: Scalar) {
    distribute_from(v, start, base, |slot, p| *slot *= p);
}

fn distribute_from(
    v: &mut [Scalar],
    start: Scalar,
    base: Scalar,
    f: impl Fn(&mut Scalar, Scalar) + Sync,
) {
    const CHUNK: usize = 1 << 12;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut p = start * base.pow_vartime([(i * CHUNK) as u64]);
        for x in chunk {
            f(x, p);
            p *= base;
        }
    });
}

fn bit_reverse(v: &mut [Scalar]) {
    let n = v.len();
    if n <= 2 {
        return;
    }
    let shift = usize::BITS - n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> shift;
        if i < j {
            v.swap(i, j);
        }
    }
}

/// In-place iterative Cooley–Tukey; `tw[k] = ω^k` for `k < n/2`.
fn transform(v: &mut [Scalar], tw: &[Scalar]) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    debug_assert_eq!(tw.len(), n / 2);
    bit_reverse(v);
    let threads = rayon::current_num_threads().max(1);
    let mut m = 2;
    while m <= n {
        let half = m / 2;
        let stride = n / m;
        let butterfly = |j: usize, lo: &mut Scalar, hi: &mut Scalar| {
            let t = *hi * tw[j * stride];
            *hi = *lo - t;
            *lo += t;
        };
        if n / m >= threads * 4 {
            v.par_chunks_mut(m)
                .with_min_len((4096 / m).max(1))
                .for_each(|chunk| {
                    let (lo, hi) = chunk.split_at_mut(half);
                    for j in 0..half {
                        butterfly(j, &mut lo[j], &mut hi[j]);
                    }
                });
        } else {
            for chunk in v.chunks_mut(m) {
                let (lo, hi) = chunk.split_at_mut(half);
                lo.par_iter_mut()
                    .zip(hi.par_iter_mut())
                    .enumerate()
                    .with_min_len(1 << 11)
                    .for_each(|(j, (l, h))| butterfly(j, l, h));
            }
        }
        m *= 2;
    }
}
