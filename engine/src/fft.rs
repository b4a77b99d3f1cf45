//! Radix-2 FFT over Fr on the CPU (rayon), and the H step built on it.
//!
//! The domain of size `n = 2^k` uses `ω = ROOT_OF_UNITY^(2^(S−k))`; the coset is `g·⟨ω⟩` with
//! `g = 7` (Fr's multiplicative generator), on which `Z(x) = x^n − 1` is the constant `g^n − 1`.
//!
//! [`Domain::h_coefficients_or_cancel`] checks a [`Cancel`] token between the seven transforms
//! and within each of their rounds (per piece of at most 4096 butterflies): once it is set, the
//! remaining pieces are skipped and the step ends with `EngineError::Cancelled`. Unset, the
//! result is the plain transforms' exactly.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::EngineError;

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
        let _ = transform(v, &self.fwd, None);
    }

    pub fn ifft(&self, v: &mut [Scalar]) {
        let _ = transform(v, &self.inv, None);
        scale(v, self.n_inv);
    }

    /// Evaluations on the coset `g·⟨ω⟩` of the polynomial with coefficients `v`.
    pub fn coset_fft(&self, v: &mut [Scalar]) {
        distribute_powers(v, Scalar::ONE, self.g);
        let _ = transform(v, &self.fwd, None);
    }

    /// Coefficients from evaluations on the coset.
    pub fn icoset_fft(&self, v: &mut [Scalar]) {
        let _ = transform(v, &self.inv, None);
        distribute_powers(v, self.n_inv, self.g_inv);
    }

    /// [`fft`](Domain::fft), stopping (the values then partly transformed) with
    /// `EngineError::Cancelled` once `cancel` is set.
    pub fn fft_or_cancel(&self, v: &mut [Scalar], cancel: &Cancel) -> Result<(), EngineError> {
        cancel.check()?;
        transform(v, &self.fwd, Some(cancel))
    }

    /// `iFFT → coset FFT` of each of a, b, c; `(a·b − c)/Z`; `coset iFFT`; first `n − 1` coefficients.
    pub fn h_coefficients(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Vec<Scalar> {
        // Without a token nothing cancels it: the error case does not occur.
        self.h_steps(a, b, c, None).unwrap_or_default()
    }

    /// [`h_coefficients`](Domain::h_coefficients), checking `cancel` between and within the
    /// transforms: `Err(Cancelled)` once it is set.
    pub fn h_coefficients_or_cancel(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        cancel: &Cancel,
    ) -> Result<Vec<Scalar>, EngineError> {
        self.h_steps(a, b, c, Some(cancel))
    }

    fn h_steps(
        &self,
        mut a: Vec<Scalar>,
        mut b: Vec<Scalar>,
        mut c: Vec<Scalar>,
        cancel: Option<&Cancel>,
    ) -> Result<Vec<Scalar>, EngineError> {
        let check = || cancel.map_or(Ok(()), |c| c.check());
        for v in [&mut a, &mut b, &mut c] {
            check()?;
            v.resize(self.n, Scalar::ZERO);
            transform(v, &self.inv, cancel)?;
            // iFFT's 1/n and the coset's g^i in one pass.
            distribute_powers(v, self.n_inv, self.g);
            transform(v, &self.fwd, cancel)?;
        }
        check()?;
        let z_inv = self.z_inv;
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .with_min_len(1 << 12)
            .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
        drop((b, c));
        check()?;
        transform(&mut a, &self.inv, cancel)?;
        distribute_powers(&mut a, self.n_inv, self.g_inv);
        a.truncate(self.n - 1);
        Ok(a)
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

/// In-place iterative Cooley–Tukey; `tw[k] = ω^k` for `k < n/2`. With `cancel`, each piece of
/// work (at most 4096 butterflies) is skipped once it is set, and the transform ends with
/// `Err(Cancelled)` after the round it was seen in.
fn transform(v: &mut [Scalar], tw: &[Scalar], cancel: Option<&Cancel>) -> Result<(), EngineError> {
    let n = v.len();
    if n <= 1 {
        return Ok(());
    }
    let stop = || cancel.is_some_and(|c| c.is_cancelled());
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
            let per = (4096 / m).max(1);
            v.par_chunks_mut(m * per).for_each(|group| {
                if stop() {
                    return;
                }
                for chunk in group.chunks_mut(m) {
                    let (lo, hi) = chunk.split_at_mut(half);
                    for j in 0..half {
                        butterfly(j, &mut lo[j], &mut hi[j]);
                    }
                }
            });
        } else {
            const PIECE: usize = 1 << 11;
            for chunk in v.chunks_mut(m) {
                let (lo, hi) = chunk.split_at_mut(half);
                lo.par_chunks_mut(PIECE)
                    .zip(hi.par_chunks_mut(PIECE))
                    .enumerate()
                    .for_each(|(k, (l, h))| {
                        if stop() {
                            return;
                        }
                        for (i, (l, h)) in l.iter_mut().zip(h.iter_mut()).enumerate() {
                            butterfly(k * PIECE + i, l, h);
                        }
                    });
            }
        }
        if let Some(c) = cancel {
            c.check()?;
        }
        m *= 2;
    }
    Ok(())
}
