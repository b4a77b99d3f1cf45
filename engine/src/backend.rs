//! The `Backend` trait: the math of a Groth16 proof's heavy steps, cut so that a CPU or a GPU can
//! do them: `compute_h`, `msm_g1`, `msm_g2`, `batch_add_g1`, `batch_add_g2` (and a `name`).
//!
//! The prover (`prover.rs`) owns the math around these steps — synthesis, density filtering, the
//! 0/1 split of scalars, assembly with `r, s` — and never changes with the backend below it.
//! [`run_steps`] runs one partition's steps on any backend, one after the other (H, then each
//! query as `msm(bases, tail) + batch_add(bases, ones)`), checking the partition's
//! [`Cancel`](crate::cancel::Cancel) token before each step and, where the backend asks for it
//! ([`Backend::check_every`]: the CPU), between chunks of each MSM and batch addition, so a
//! cancelled partition stops within a chunk's time ([`msm_chunked`], [`batch_add_chunked`]; a
//! chunked MSM is the sum of its chunks' MSMs: the same point).
//!
//! How a partition is staged, computed and collected by the actor pipeline, and a device's
//! memory, are [`Pipeline`](crate::pipeline::Pipeline)'s (`pipeline.rs`).

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_srs::Srs;

use crate::cancel::Cancel;
use crate::density::BitVec;
use crate::error::EngineError;
use crate::gather::{gather_points, host_threads, Gather};
use crate::prover::{Prepared, Split, Sums};
use crate::timings::Timings;

/// A bitmap over base indices: bit `i` (word `i / 64`, bit `i % 64`, LSB first) selects `bases[i]`.
pub type Bitmap = [u64];

/// The heavy steps of a proof, call by call: each takes its inputs on the host and returns its
/// result there.
pub trait Backend: Send + Sync {
    /// A short name for logs and errors ("cpu", "cuda:0").
    fn name(&self) -> &str;

    /// The H polynomial's coefficients.
    ///
    /// `a`, `b`, `c` are the evaluations over the domain, each zero-padded to the domain size
    /// `n` (a power of two). Computes `iFFT → coset FFT (generator 7) → (a·b − c)/Z → coset iFFT`
    /// and returns the first `n − 1` coefficients. The inputs are consumed so their memory can be
    /// released as soon as H is done.
    fn compute_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, EngineError>;

    /// `Σ scalars[i] · bases[i]` over G1; `bases.len() == scalars.len()`. Scalars may be zero.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError>;

    /// `Σ scalars[i] · bases[i]` over G2; `bases.len() == scalars.len()`. Scalars may be zero.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError>;

    /// `Σ bases[i]` for every `i` whose bit is set in `bits` (the scalars equal to one).
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError>;

    /// `Σ bases[i]` for every `i` whose bit is set in `bits`, over G2.
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError>;

    /// [`compute_h`](Backend::compute_h), stopping with `EngineError::Cancelled` once `cancel`
    /// is set. The default checks before and after; the CPU backend also checks between and
    /// within its FFTs' rounds.
    fn compute_h_or_cancel(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        cancel: &Cancel,
    ) -> Result<Vec<Scalar>, EngineError> {
        cancel.check()?;
        let h = self.compute_h(a, b, c)?;
        cancel.check()?;
        Ok(h)
    }

    /// The most G1 points [`run_steps`] gives one MSM or batch-addition call between two
    /// cancellation checks (G2: a quarter of it), or `None` for whole calls (a GPU: its calls
    /// are short, or it checks between its own stages).
    fn check_every(&self) -> Option<usize> {
        None
    }
}

/// H, then each query as `msm(bases, tail) + batch_add(bases, ones)`.
pub fn run_steps<B: Backend + ?Sized>(
    b: &B,
    srs: &Srs,
    p: Prepared,
    t: &mut Timings,
) -> Result<Sums, EngineError> {
    let mut p = p;
    // The recorded path: the products on the CPU first.
    p.complete_on_host()?;
    let Prepared {
        a,
        b: b_evals,
        c,
        l,
        a_query,
        b_query,
        msm_chunk,
        stream,
        cancel,
        ..
    } = p;
    cancel.check()?;
    let chunk = msm_chunk
        .or(stream.map(|t| t.chunk as usize))
        .unwrap_or(usize::MAX)
        .max(1);
    // Chunks a cancellation check can stop between (G2 points cost about four G1 points).
    let every = b.check_every().unwrap_or(usize::MAX).max(64);
    let (chunk_g1, chunk_g2) = (chunk.min(every), chunk.min((every / 4).max(64)));
    let start = Instant::now();
    let h_coeffs = b.compute_h_or_cancel(a, b_evals, c, &cancel)?;
    let h = msm_chunked(srs.h(), &h_coeffs, chunk_g1, &cancel, |x, y| b.msm_g1(x, y))?;
    drop(h_coeffs);
    t.step("ntt_msm_h", start);
    // The streamed tier gathers each query's nonzero points (`gather.rs`) where that pays, as
    // the GPU's does: the same chunks here, so its proofs are checked on the host.
    let plan = |split: &Split| {
        stream
            .map(|_| Gather::of(split, host_threads()))
            .filter(Gather::pays)
    };
    let g1 = |bases: &[G1Affine],
              split: &Split,
              plan: Option<&Gather>,
              t: &mut Timings|
     -> Result<G1Projective, EngineError> {
        let start = Instant::now();
        if let Some(g) = plan {
            let acc = gathered_msm(
                bases,
                split,
                g,
                chunk_g1,
                &cancel,
                |x, y| b.msm_g1(x, y),
                |x, y| b.batch_add_g1(x, y),
            )?;
            t.step("tail_msm", start);
            return Ok(acc);
        }
        let mut acc = msm_chunked(bases, &split.tail, chunk_g1, &cancel, |x, y| b.msm_g1(x, y))?;
        t.step("tail_msm", start);
        if split.ones.count_ones() > 0 {
            let start = Instant::now();
            acc += batch_add_chunked(bases, split.ones.words(), every, &cancel, |x, y| {
                b.batch_add_g1(x, y)
            })?;
            t.step("batch_add", start);
        }
        Ok(acc)
    };
    let l = g1(srs.l(), &l, plan(&l).as_ref(), t)?;
    let a = g1(srs.a(), &a_query, plan(&a_query).as_ref(), t)?;
    let b_plan = plan(&b_query);
    let b_g1 = g1(srs.b_g1(), &b_query, b_plan.as_ref(), t)?;
    let start = Instant::now();
    let mut b_g2: G2Projective = if let Some(g) = &b_plan {
        gathered_msm(
            srs.b_g2(),
            &b_query,
            g,
            chunk_g2,
            &cancel,
            |x, y| b.msm_g2(x, y),
            |x, y| b.batch_add_g2(x, y),
        )?
    } else {
        msm_chunked(srs.b_g2(), &b_query.tail, chunk_g2, &cancel, |x, y| {
            b.msm_g2(x, y)
        })?
    };
    if b_plan.is_none() && b_query.ones.count_ones() > 0 {
        b_g2 += batch_add_chunked(
            srs.b_g2(),
            b_query.ones.words(),
            every / 4,
            &cancel,
            |x, y| b.batch_add_g2(x, y),
        )?;
    }
    cancel.check()?;
    t.step("b_g2_msm", start);
    Ok(Sums {
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// A query's MSM (its tail's MSM plus its ones' batch addition) over the chunks of at most
/// `capacity` points of its gather plan `g` (`Gather::of(split, ..)`, `gather.rs`): each chunk's
/// nonzero-tail bases with their packed scalars, and its ones' bases with every bit set. The
/// same point as the whole MSM.
#[allow(clippy::too_many_arguments)]
pub fn gathered_msm<P: Copy + Send + Sync, G: std::ops::AddAssign + group::Group>(
    bases: &[P],
    split: &Split,
    g: &Gather,
    capacity: usize,
    cancel: &Cancel,
    msm: impl Fn(&[P], &[Scalar]) -> Result<G, EngineError>,
    add: impl Fn(&[P], &Bitmap) -> Result<G, EngineError>,
) -> Result<G, EngineError> {
    cancel.check()?;
    if bases.len() != split.len() || g.len() != split.len() {
        return Err(EngineError::Other(format!(
            "gathered MSM: {} bases and a plan of {} points for {} scalars",
            bases.len(),
            g.len(),
            split.len()
        )));
    }
    let packed = Gather::packed_tail(split);
    let mut acc = G::identity();
    for c in g.chunks(capacity) {
        cancel.check()?;
        let idx = g
            .indices(&c, host_threads())
            .ok_or_else(|| EngineError::Other("gathered MSM: a chunk not of its plan".into()))?;
        let points = gather_points(bases, &idx);
        if c.tail > 0 {
            let scalars = &packed[c.tail_before..c.tail_before + c.tail];
            acc += msm(&points[..c.tail], scalars)?;
        }
        if c.ones > 0 {
            acc += add(&points[c.tail..], BitVec::all_set(c.ones).words())?;
        }
    }
    Ok(acc)
}

/// An MSM over bases in chunks of `chunk` points (the small-memory tier streams bases this way;
/// the CPU chunks so that `cancel` is checked between chunks); the sum of the chunks' results is
/// the MSM. `Err(Cancelled)` once `cancel` is set.
pub fn msm_chunked<P, G: std::ops::AddAssign + group::Group>(
    bases: &[P],
    scalars: &[Scalar],
    chunk: usize,
    cancel: &Cancel,
    msm: impl Fn(&[P], &[Scalar]) -> Result<G, EngineError>,
) -> Result<G, EngineError> {
    cancel.check()?;
    let chunk = chunk.max(1);
    if bases.len() <= chunk || bases.len() != scalars.len() {
        return msm(bases, scalars);
    }
    let mut acc = G::identity();
    for (b, s) in bases.chunks(chunk).zip(scalars.chunks(chunk)) {
        cancel.check()?;
        acc += msm(b, s)?;
    }
    Ok(acc)
}

/// A batch addition (`Σ bases[i]` where bit `i` of `bits` is set) in chunks of about `chunk`
/// bases (a multiple of 64, so each chunk's bits are whole words), `cancel` checked between
/// them; the sum of the chunks' sums is the batch addition.
pub fn batch_add_chunked<P, G: std::ops::AddAssign + group::Group>(
    bases: &[P],
    bits: &Bitmap,
    chunk: usize,
    cancel: &Cancel,
    add: impl Fn(&[P], &Bitmap) -> Result<G, EngineError>,
) -> Result<G, EngineError> {
    cancel.check()?;
    let chunk = chunk.div_ceil(64).max(1).saturating_mul(64);
    if bases.len() <= chunk {
        return add(bases, bits);
    }
    let mut acc = G::identity();
    for (k, b) in bases.chunks(chunk).enumerate() {
        cancel.check()?;
        let from = (k * chunk / 64).min(bits.len());
        let to = (from + chunk / 64).min(bits.len());
        acc += add(b, &bits[from..to])?;
    }
    Ok(acc)
}
