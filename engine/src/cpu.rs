//! The CPU backend: rayon FFTs, blst's Pippenger for the MSMs and blst's batched affine addition.
//! It is the reference every other backend is tested against. FFT domains are computed once per
//! size and kept. Its steps stop at a partition's cancellation ([`Cancel`]): H checks between and
//! within its FFTs' rounds, and `run_steps` gives its MSMs at most [`CHECK_EVERY`] points a call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rayon::prelude::*;

use crate::backend::{Backend, Bitmap};
use crate::cancel::Cancel;
use crate::error::EngineError;
use crate::fft::Domain;
use crate::pipeline::Pipeline;

/// Below this many points an MSM is done by plain double-and-add (blst's Pippenger wants ≥ 2).
const TINY: usize = 2;

/// The most G1 points one MSM call takes between cancellation checks (`Backend::check_every`):
/// ~0.2 s of Pippenger on two cores, so a cancelled partition stops well within a second.
pub const CHECK_EVERY: usize = 1 << 16;

#[derive(Default)]
pub struct CpuBackend {
    domains: Mutex<HashMap<usize, Arc<Domain>>>,
}

impl CpuBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// The twiddles of domain size `n`, computed once and kept.
    pub fn domain(&self, n: usize) -> Result<Arc<Domain>, EngineError> {
        let mut map = self
            .domains
            .lock()
            .map_err(|_| self.err("domain cache poisoned"))?;
        if let Some(d) = map.get(&n) {
            return Ok(d.clone());
        }
        let d =
            Arc::new(Domain::new(n).ok_or_else(|| {
                self.err(&format!("domain size {n} is not a power of two ≤ 2^32"))
            })?);
        map.insert(n, d.clone());
        Ok(d)
    }

    fn err(&self, what: &str) -> EngineError {
        EngineError::Backend {
            backend: "cpu".into(),
            what: what.into(),
        }
    }
}

fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_mut(32)
        .zip(scalars.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

/// Keeps the (base, scalar) pairs whose scalar is non-zero, when that drops at least half.
fn nonzero<'a, P: Copy + Send + Sync>(
    bases: &'a [P],
    scalars: &'a [Scalar],
) -> (std::borrow::Cow<'a, [P]>, std::borrow::Cow<'a, [Scalar]>) {
    let zeros = scalars
        .par_iter()
        .filter(|s| bool::from(s.is_zero()))
        .count();
    if zeros * 2 < scalars.len() {
        return (bases.into(), scalars.into());
    }
    let (b, s): (Vec<P>, Vec<Scalar>) = bases
        .par_iter()
        .zip(scalars.par_iter())
        .filter(|(_, s)| !bool::from(s.is_zero()))
        .map(|(b, s)| (*b, *s))
        .unzip();
    (b.into(), s.into())
}

fn selected<P: Copy + Send + Sync>(bases: &[P], bits: &Bitmap) -> Vec<P> {
    bases
        .par_iter()
        .enumerate()
        .filter(|(i, _)| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
        .map(|(_, b)| *b)
        .collect()
}

// SAFETY (all casts below): blstrs' G1Affine/G2Affine/G1Projective/G2Projective are
// repr(transparent) over blst's p1_affine/p2_affine/p1/p2.
fn g1_blst(p: &[G1Affine]) -> &[blst_p1_affine] {
    unsafe { std::slice::from_raw_parts(p.as_ptr() as *const blst_p1_affine, p.len()) }
}
fn g2_blst(p: &[G2Affine]) -> &[blst_p2_affine] {
    unsafe { std::slice::from_raw_parts(p.as_ptr() as *const blst_p2_affine, p.len()) }
}
fn g1_from(p: blst_p1) -> G1Projective {
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) }
}
fn g2_from(p: blst_p2) -> G2Projective {
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn compute_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, EngineError> {
        let n = a.len().max(1).next_power_of_two();
        if b.len() > n || c.len() > n {
            return Err(self.err(&format!(
                "a, b, c lengths differ ({}, {}, {})",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        Ok(self.domain(n)?.h_coefficients(a, b, c))
    }

    fn compute_h_or_cancel(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        cancel: &Cancel,
    ) -> Result<Vec<Scalar>, EngineError> {
        let n = a.len().max(1).next_power_of_two();
        if b.len() > n || c.len() > n {
            return Err(self.err(&format!(
                "a, b, c lengths differ ({}, {}, {})",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        self.domain(n)?.h_coefficients_or_cancel(a, b, c, cancel)
    }

    fn check_every(&self) -> Option<usize> {
        Some(CHECK_EVERY)
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError> {
        if bases.len() != scalars.len() {
            return Err(self.err(&format!(
                "msm_g1: {} bases, {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        let (bases, scalars) = nonzero(bases, scalars);
        if bases.len() < TINY {
            return Ok(bases.iter().zip(scalars.iter()).map(|(b, s)| b * s).sum());
        }
        Ok(g1_from(g1_blst(&bases).mult(&scalar_bytes(&scalars), 255)))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError> {
        if bases.len() != scalars.len() {
            return Err(self.err(&format!(
                "msm_g2: {} bases, {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        let (bases, scalars) = nonzero(bases, scalars);
        if bases.len() < TINY {
            return Ok(bases.iter().zip(scalars.iter()).map(|(b, s)| b * s).sum());
        }
        Ok(g2_from(g2_blst(&bases).mult(&scalar_bytes(&scalars), 255)))
    }

    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError> {
        let sel = selected(bases, bits);
        if sel.is_empty() {
            return Ok(G1Projective::identity());
        }
        Ok(g1_from(g1_blst(&sel).add()))
    }

    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError> {
        let sel = selected(bases, bits);
        if sel.is_empty() {
            return Ok(G2Projective::identity());
        }
        Ok(g2_from(g2_blst(&sel).add()))
    }
}

/// The host defaults: a partition is staged, computed and collected on the host.
impl Pipeline for CpuBackend {}
