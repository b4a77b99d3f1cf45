//! Parameters for custom circuits: a local, seeded setup (for development and custom circuits,
//! not a trusted ceremony), written in the Filecoin format and reused from disk on the next run.
//!
//! [`generate`] draws the trapdoors from the RNG in bellperson's order and computes the same
//! points as bellperson's `generate_random_parameters` — byte-identical parameters for the same
//! seed — but with table-driven fixed-base multiplication (`fixed_base.rs`), several times
//! faster; that is what makes a 2^22 setup practical. On a GPU ([`SetupOn::Gpu`]) the same
//! tables multiply on the device (`gpu/fixed_base.rs`), which is what makes a 2^27 setup take
//! minutes; the points are the same either way. [`ensure_params`] writes a file only where none
//! exists; [`open_or_generate`] opens one, generating it first if it is absent.

use std::path::Path;
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, SynthesisError};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_srs::{write_params, OpenOptions, Srs};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use rayon::prelude::*;

use crate::error::EngineError;
use crate::fft::Domain;
use crate::fixed_base::FixedBase;
use crate::r1cs::{count, evaluate, QapAt};

fn synth_err(source: SynthesisError) -> EngineError {
    EngineError::Synthesis { circuit: 0, source }
}

/// Where the setup's fixed-base products are computed (the points are the same).
#[derive(Clone, Copy)]
pub enum SetupOn<'a> {
    /// The CPU tables, on every core (rayon).
    Cpu,
    /// One GPU.
    Gpu(&'a crate::gpu::GpuDevice),
}

/// The window tables of the two generators, and where they multiply.
struct Tables<'a> {
    on: SetupOn<'a>,
    t1: FixedBase<G1Projective>,
    t2: FixedBase<G2Projective>,
}

impl Tables<'_> {
    /// `k · g1` for every `k`, each section timed in the log.
    fn g1(&self, what: &str, ks: &[Scalar]) -> Result<Vec<G1Affine>, EngineError> {
        let t = std::time::Instant::now();
        let out = match self.on {
            SetupOn::Cpu => self.t1.mul_all(ks),
            SetupOn::Gpu(d) => crate::gpu::fixed_base::mul_all_g1(d, &self.t1, ks)?,
        };
        log::info!(
            "setup: {what}: {} G1 products in {:.2?}",
            ks.len(),
            t.elapsed()
        );
        Ok(out)
    }

    fn g2(&self, what: &str, ks: &[Scalar]) -> Result<Vec<G2Affine>, EngineError> {
        let t = std::time::Instant::now();
        let out = match self.on {
            SetupOn::Cpu => self.t2.mul_all(ks),
            SetupOn::Gpu(d) => crate::gpu::fixed_base::mul_all_g2(d, &self.t2, ks)?,
        };
        log::info!(
            "setup: {what}: {} G2 products in {:.2?}",
            ks.len(),
            t.elapsed()
        );
        Ok(out)
    }
}

/// The non-zero values of `parts`, in order, in a vector of exactly their number.
fn nonzero(parts: &[&[Scalar]]) -> Vec<Scalar> {
    let is = |k: &&Scalar| !bool::from(k.is_zero());
    let n = parts.iter().map(|p| p.par_iter().filter(is).count()).sum();
    let mut out = Vec::with_capacity(n);
    for p in parts {
        out.extend(p.iter().filter(is));
    }
    out
}

/// `points` without the identity: a no-op for products of non-zero values by a generator (kept
/// so that the sections are bellperson's whatever the products), in place and shrunk.
fn without_identity<P: PrimeCurveAffine>(mut points: Vec<P>) -> Vec<P> {
    points.retain(|p| !bool::from(p.is_identity()));
    points.shrink_to_fit();
    points
}

/// Parameters for `circuit` from trapdoors drawn from `rng` (bellperson's order: g1, g2, α, β,
/// γ, δ, τ).
pub fn generate_with<C: Circuit<Scalar> + Clone>(
    circuit: C,
    rng: &mut dyn RngCore,
) -> Result<Parameters<Bls12>, EngineError> {
    generate_on(circuit, rng, SetupOn::Cpu)
}

/// [`generate_with`], its fixed-base products computed `on` the CPU or a GPU.
pub fn generate_on<C: Circuit<Scalar> + Clone>(
    circuit: C,
    rng: &mut dyn RngCore,
    on: SetupOn<'_>,
) -> Result<Parameters<Bls12>, EngineError> {
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let alpha = Scalar::random(&mut *rng);
    let beta = Scalar::random(&mut *rng);
    let gamma = Scalar::random(&mut *rng);
    let delta = Scalar::random(&mut *rng);
    let tau = Scalar::random(&mut *rng);

    let started = std::time::Instant::now();
    let (inputs, aux, rows) = count(circuit.clone()).map_err(synth_err)?;
    log::info!(
        "setup: counted {rows} constraints, {inputs} inputs, {aux} aux in {:.2?}",
        started.elapsed()
    );
    let n = rows.max(1).next_power_of_two();
    let domain =
        Domain::new(n).ok_or_else(|| synth_err(SynthesisError::PolynomialDegreeTooLarge))?;
    let gamma_inv = Option::<Scalar>::from(gamma.invert())
        .ok_or_else(|| synth_err(SynthesisError::UnexpectedIdentity))?;
    let delta_inv = Option::<Scalar>::from(delta.invert())
        .ok_or_else(|| synth_err(SynthesisError::UnexpectedIdentity))?;

    let mut powers = vec![Scalar::ZERO; n];
    powers.par_chunks_mut(4096).enumerate().for_each(|(i, c)| {
        let mut p = tau.pow_vartime([(i * 4096) as u64]);
        for x in c {
            *x = p;
            p *= tau;
        }
    });
    let tables = Tables {
        on,
        t1: FixedBase::new(g1),
        t2: FixedBase::new(g2),
    };

    // H: τ^i · Z(τ) / δ for i < n − 1.
    let z_over_delta = (tau.pow_vartime([n as u64]) - Scalar::ONE) * delta_inv;
    let h_exps: Vec<Scalar> = powers[..n - 1]
        .par_iter()
        .map(|p| *p * z_over_delta)
        .collect();
    let h = tables.g1("H", &h_exps)?;
    drop(h_exps);

    // Lagrange coefficients at τ, then every variable's u, v, w at τ.
    let t = std::time::Instant::now();
    domain.ifft(&mut powers);
    let q = evaluate(circuit, &powers, (inputs, aux)).map_err(synth_err)?;
    drop(powers);
    log::info!("setup: QAP evaluated at τ in {:.2?}", t.elapsed());

    // A and B queries: inputs then aux; a zero polynomial gives the identity, which the file
    // leaves out, so only the non-zero values are multiplied and each section is built at its
    // exact size. (Multiplying every value and filtering the products in place would keep the
    // full-length allocation: at 32 GiB three quarters of the B variables are zero, ~28 GB of
    // capacity held by the B sections for the life of the parameters.)
    let a = {
        let u = nonzero(&[&q.u_inputs, &q.u_aux]);
        without_identity(tables.g1("A", &u)?)
    };
    let (b_g1, b_g2) = {
        let v = nonzero(&[&q.v_inputs, &q.v_aux]);
        let b_g1 = tables.g1("B_G1", &v)?;
        let b_g2 = tables.g2("B_G2", &v)?;
        (b_g1, b_g2)
    };
    let (b_g1, b_g2) = (without_identity(b_g1), without_identity(b_g2));

    // IC (inputs, over γ) and L (aux, over δ): (β·u + α·v + w) / γ or δ, computed in place of
    // w, with u and v freed before the products (the setup's peak is then the parameters plus
    // one scalar per aux variable).
    let QapAt {
        u_inputs,
        v_inputs,
        w_inputs: mut ic_exps,
        u_aux,
        v_aux,
        w_aux: mut l_exps,
    } = q;
    let ext = |us: Vec<Scalar>, vs: Vec<Scalar>, ws: &mut [Scalar], inv: Scalar| {
        ws.par_iter_mut()
            .zip(us.par_iter())
            .zip(vs.par_iter())
            .for_each(|((w, u), v)| *w = (*u * beta + *v * alpha + *w) * inv);
    };
    ext(u_inputs, v_inputs, &mut ic_exps, gamma_inv);
    ext(u_aux, v_aux, &mut l_exps, delta_inv);
    let ic = tables.g1("IC", &ic_exps)?;
    drop(ic_exps);
    let l = tables.g1("L", &l_exps)?;
    drop(l_exps);
    if l.iter().any(|p| bool::from(p.is_identity())) {
        return Err(synth_err(SynthesisError::UnconstrainedVariable));
    }

    let (g1a, g2a) = (g1.to_affine(), g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1a * alpha).to_affine(),
        beta_g1: (g1a * beta).to_affine(),
        beta_g2: (g2a * beta).to_affine(),
        gamma_g2: (g2a * gamma).to_affine(),
        delta_g1: (g1a * delta).to_affine(),
        delta_g2: (g2a * delta).to_affine(),
        ic,
    };
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

/// Parameters for `circuit` from an RNG seeded by `seed` (ChaCha20).
pub fn generate<C: Circuit<Scalar> + Clone>(
    circuit: C,
    seed: u64,
) -> Result<Parameters<Bls12>, EngineError> {
    generate_seeded_on(circuit, seed, SetupOn::Cpu)
}

/// [`generate`] with its products `on` the CPU or a GPU.
pub fn generate_seeded_on<C: Circuit<Scalar> + Clone>(
    circuit: C,
    seed: u64,
    on: SetupOn<'_>,
) -> Result<Parameters<Bls12>, EngineError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    generate_on(circuit, &mut rng, on)
}

/// Writes parameters for `circuit` (seeded by `seed`) to `path` unless the file exists; returns
/// whether they were generated now.
pub fn ensure_params<C: Circuit<Scalar> + Clone>(
    path: &Path,
    circuit: C,
    seed: u64,
) -> Result<bool, EngineError> {
    if path.exists() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| EngineError::Other(format!("{}: {e}", dir.display())))?;
    }
    write_params(path, &generate(circuit, seed)?)?;
    Ok(true)
}

/// Opens the parameters at `path`, generating and writing them first if the file is absent.
/// Returns the opened set and whether it was generated now.
pub fn open_or_generate<C: Circuit<Scalar> + Clone>(
    path: &Path,
    circuit: C,
    seed: u64,
    opts: &OpenOptions,
) -> Result<(Srs, bool), EngineError> {
    let generated = ensure_params(path, circuit, seed)?;
    Ok((Srs::open(path, opts)?, generated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::COnlyAux;

    #[test]
    fn a_setup_holds_each_section_at_its_exact_size_and_the_srs_takes_it_without_copying() {
        // Its aux variables are in C only: zero in A and B, so those sections drop points.
        let p = generate(COnlyAux::random(20, 5), 5).unwrap();
        assert!(p.a.len() < p.vk.ic.len() + p.l.len());
        assert!(p.b_g1.len() < p.vk.ic.len() + p.l.len());
        let sections = [
            ("h", p.h.len(), p.h.capacity()),
            ("l", p.l.len(), p.l.capacity()),
            ("a", p.a.len(), p.a.capacity()),
            ("b_g1", p.b_g1.len(), p.b_g1.capacity()),
            ("b_g2", p.b_g2.len(), p.b_g2.capacity()),
        ];
        for (name, len, capacity) in sections {
            assert_eq!(capacity, len, "{name}: capacity beyond its points");
        }
        let g1 = [p.h.as_ptr(), p.l.as_ptr(), p.a.as_ptr(), p.b_g1.as_ptr()];
        let g2 = p.b_g2.as_ptr();
        let srs = Srs::from_owned(p);
        let held = [srs.h(), srs.l(), srs.a(), srs.b_g1()].map(|s| s.as_ptr());
        assert_eq!(held, g1, "the G1 sections were copied");
        assert_eq!(srs.b_g2().as_ptr(), g2, "the G2 section was copied");
    }
}
