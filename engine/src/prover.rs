//! The Groth16 prover, in bellperson's exact conventions (`synth.rs` lists them), over any
//! [`Pipeline`] (a [`Backend`](crate::backend::Backend)'s math, driven stage by stage).
//!
//! One partition goes through four steps, each a public function so that a pipeline can run them
//! on different actors: [`prepare`] (shape and satisfiability checks, the MSM scalar vectors, the
//! 0/1 split), [`compute`] (H and the MSMs on the backend), [`assemble`] (the proof from the sums
//! and `r, s`) and [`verify`](crate::verify).
//!
//! `prepare` builds the dense scalar vectors at their exact sizes. On the recorded path (the
//! default, `ProveOptions::recorded`) it leaves `a, b, c` empty for the backend, and the MSM
//! scalar splits too where `ProveOptions::splits_on_device` says the backend builds them from
//! the witness (a GPU that stages on the device; a host backend in
//! [`Prepared::complete_on_host`]); otherwise the splits are built on the synthesis thread.
//!
//! ```text
//! A = α + Σa + r·δ                                   (G1)
//! B = β + Σb_g2 + s·δ                                (G2)
//! C = Σh + Σl + s·Σa + r·Σb_g1 + s·α + r·β + r·s·δ   (G1)
//! ```

use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{Proof, VerifyingKey};
use bellperson::Circuit;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_srs::Srs;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rand_core::RngCore;
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::density::BitVec;
use crate::error::EngineError;
use crate::pipeline::{Pipeline, Staged};
use crate::recorded::{RecordOptions, Recording, RecordingCache};
use crate::synth::{synthesize_batch, Assignment, Shape};
use crate::timings::Timings;
use crate::verify::Verifier;

#[derive(Debug, Clone)]
pub struct ProveOptions {
    /// Verify every proof before returning it (default on).
    pub self_verify: bool,
    /// Check `a·b = c` on every row before any expensive work (default on).
    pub check_satisfied: bool,
    /// Synthesis from recorded constraints (default on; `recorded.enabled = false` builds every
    /// proof's constraints as `synth::synthesize` does). Same assignment, same proof bytes.
    pub recorded: RecordOptions,
    /// On the recorded path, leave the MSM scalar splits to the backend: a GPU builds them from
    /// the witness it uploads (so only the witness crosses PCIe and the synthesis threads do no
    /// split work), a host backend in [`Prepared::complete_on_host`]. Off by default; the
    /// pipeline and [`Prover`] set it where the backend stages on the device.
    pub splits_on_device: bool,
    /// On the recorded path, compute `a, b, c` from the recording (and the splits, if pending)
    /// here on the synthesis thread ([`Prepared::complete_on_host`]): the pipeline sets it where
    /// a partition takes the streamed tier with its products on the host, so that CPU work runs
    /// while the GPU proves the partition before, not on the GPU's turn. Off by default.
    pub products_on_host: bool,
    /// Run every partition in the streamed tier (`Prepared::stream`): what the pipeline sets on
    /// a partition whose card cannot hold it whole; here for tests and benchmarks.
    pub stream: Option<crate::gpu::stream_plan::StreamTier>,
    /// On the recorded path, pack the witness for its upload (`Recorded::packed`,
    /// `packed_witness.rs`) at `prepare`, on the synthesis thread: the pipeline sets it where
    /// partitions may take the streamed tier, whose device uploads the witness. `prepare`
    /// packs a partition given a streamed tier that uploads it (`stream`) anyway. Off by default.
    pub pack_witness: bool,
    /// Checked by the heavy steps at their boundaries (`Prepared::cancel`): once set, a
    /// partition's compute ends with `EngineError::Cancelled` (`cancel.rs`).
    pub cancel: Cancel,
}

impl Default for ProveOptions {
    fn default() -> Self {
        ProveOptions {
            self_verify: true,
            check_satisfied: true,
            recorded: RecordOptions::default(),
            splits_on_device: false,
            products_on_host: false,
            stream: None,
            pack_witness: false,
            cancel: Cancel::default(),
        }
    }
}

/// Scalars of one MSM after the 0/1 split: `tail` holds the scalars other than 0 and 1 (with
/// zeros where 0 or 1 stood), `ones` marks where a 1 stood (summed by batch addition).
#[derive(Debug, Clone, Default)]
pub struct Split {
    pub tail: Vec<Scalar>,
    pub ones: BitVec,
}

impl Split {
    pub fn new(mut scalars: Vec<Scalar>) -> Split {
        use crate::scalar_words::is_one;
        let ones = BitVec::of(&scalars, is_one);
        if ones.count_ones() > 0 {
            scalars
                .par_iter_mut()
                .with_min_len(1 << 12)
                .filter(|s| is_one(s))
                .for_each(|s| *s = Scalar::ZERO);
        }
        Split {
            tail: scalars,
            ones,
        }
    }
    pub fn len(&self) -> usize {
        self.tail.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tail.is_empty()
    }
    /// The nonzero scalars of the tail: the points its MSM adds (a GPU MSM sizes its sorted
    /// lists and picks its window by it).
    pub fn nonzero_tail(&self) -> u64 {
        self.tail
            .par_iter()
            .with_min_len(1 << 14)
            .filter(|s| !crate::scalar_words::is_zero(s))
            .count() as u64
    }
}

/// A partition ready for the backend.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub index: usize,
    /// Evaluations of A, B, C, zero-padded to the domain size (empty where `recorded` is set).
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Against `l`: the aux assignment.
    pub l: Split,
    /// Against `a`: inputs, then the aux variables dense in A.
    pub a_query: Split,
    /// Against `b_g1` and `b_g2`: inputs dense in B, then aux dense in B.
    pub b_query: Split,
    pub public_inputs: Vec<Scalar>,
    pub shape: Shape,
    /// The small-memory tier: MSM bases streamed in chunks of this many points (`None`: whole).
    pub msm_chunk: Option<usize>,
    /// The streamed tier (a GPU whose budget holds neither the SRS nor the whole partition):
    /// the steps run one after another, each MSM's bases streamed in chunks
    /// (`gpu::stream_plan`). A host backend runs the same steps with its MSMs in the same chunks.
    pub stream: Option<crate::gpu::stream_plan::StreamTier>,
    /// The recorded path: the witness and its recording; `a`, `b`, `c` are left empty, for the
    /// backend to compute (a GPU from the uploaded witness, else [`Prepared::complete_on_host`]);
    /// the three splits are built.
    pub recorded: Option<Recorded>,
    /// Checked at the step boundaries of compute: once set, compute ends with
    /// `EngineError::Cancelled` and frees what it holds.
    pub cancel: Cancel,
}

/// A witness whose products and MSM scalars are still to be computed, with its recording.
#[derive(Clone)]
pub struct Recorded {
    pub rec: Arc<Recording>,
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    /// Check every row's `a·b = c` once the products exist (`ProveOptions::check_satisfied`).
    pub check_satisfied: bool,
    /// The `Prepared`'s splits are not built yet (`ProveOptions::splits_on_device`): the backend
    /// builds them from the witness and the recording's densities.
    pub splits_pending: bool,
    /// `inputs ++ aux` packed for its upload (`packed_witness.rs`), where `prepare` packed it
    /// (`ProveOptions::pack_witness`, or a streamed tier that uploads it) and it pays.
    pub packed: Option<crate::packed_witness::PackedWitness>,
}

impl Prepared {
    /// Packs the recorded witness for its upload (`Recorded::packed`) where packing pays, on
    /// `threads` threads of the caller's (`prepare` does, where `ProveOptions::pack_witness` or
    /// its streamed tier asks): whether it is packed.
    pub fn pack_witness(&mut self, threads: usize) -> bool {
        let Some(r) = self.recorded.as_mut() else {
            return false;
        };
        if r.packed.is_none() {
            r.packed = crate::packed_witness::PackedWitness::of(&r.inputs, &r.aux, threads)
                .filter(|p| p.pays());
        }
        r.packed.is_some()
    }
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("rows", &self.rec.counts().rows())
            .field("inputs", &self.inputs.len())
            .field("aux", &self.aux.len())
            .field("check_satisfied", &self.check_satisfied)
            .field("splits_pending", &self.splits_pending)
            .finish()
    }
}

/// The MSM scalar vectors of a witness, split: `(l, a_query, b_query)`.
pub fn splits(
    inputs: &[Scalar],
    aux: Vec<Scalar>,
    [a_aux, b_in, b_aux]: [&BitVec; 3],
) -> (Split, Split, Split) {
    // Each built at its exact size, with no gathered copy on the way: a partition's host memory
    // at its peak is the witness and the three splits (`Dims::host_recorded` in cuzk-actors).
    let mut a_query = Vec::with_capacity(inputs.len() + a_aux.count_ones());
    a_query.extend_from_slice(inputs);
    a_aux.gather_into(&aux, &mut a_query);
    let mut b_query = Vec::with_capacity(b_in.count_ones() + b_aux.count_ones());
    b_in.gather_into(inputs, &mut b_query);
    b_aux.gather_into(&aux, &mut b_query);
    let (l, (a_query, b_query)) = rayon::join(
        || Split::new(aux),
        || rayon::join(|| Split::new(a_query), || Split::new(b_query)),
    );
    (l, a_query, b_query)
}

/// `prepare`'s error for row `row` with `a·b ≠ c`.
pub fn unsatisfied(circuit: usize, row: usize, a: &Scalar, b: &Scalar, c: &Scalar) -> EngineError {
    EngineError::Unsatisfied {
        circuit,
        row,
        a: format!("{a:?}"),
        b: format!("{b:?}"),
        c: format!("{c:?}"),
    }
}

impl Prepared {
    /// Whether the MSM scalar splits are still to be built from the witness (by the backend).
    pub fn splits_pending(&self) -> bool {
        self.recorded.as_ref().is_some_and(|r| r.splits_pending)
    }

    /// On the recorded path, computes on the CPU what the backend was left: `a`, `b`, `c` by the
    /// recording's products (then the row check), and the splits if they are pending, so the
    /// `Prepared` is the full path's, bit for bit. A no-op otherwise.
    pub fn complete_on_host(&mut self) -> Result<(), EngineError> {
        let Some(r) = self.recorded.take() else {
            return Ok(());
        };
        let n = r.rec.counts().rows().next_power_of_two();
        let [a, b, c] = r.rec.products_padded(&r.inputs, &r.aux, n, self.index)?;
        if r.check_satisfied {
            let rows = r.rec.counts().rows();
            let bad = (0..rows)
                .into_par_iter()
                .with_min_len(4096)
                .find_first(|&i| a[i] * b[i] != c[i]);
            if let Some(row) = bad {
                return Err(unsatisfied(self.index, row, &a[row], &b[row], &c[row]));
            }
        }
        (self.a, self.b, self.c) = (a, b, c);
        if r.splits_pending {
            let [a_aux, b_in, b_aux] = r.rec.densities();
            (self.l, self.a_query, self.b_query) =
                splits(&r.inputs, r.aux, [&a_aux, &b_in, &b_aux]);
        }
        Ok(())
    }
}

/// The MSM results of one partition.
#[derive(Debug, Clone, Copy)]
pub struct Sums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// Checks that `asg` fits `srs`, that it is satisfied, and builds the MSM scalar vectors.
pub fn prepare(
    index: usize,
    asg: Assignment,
    srs: &Srs,
    opts: &ProveOptions,
) -> Result<Prepared, EngineError> {
    let shape_err = |what: String| EngineError::ShapeMismatch {
        circuit: index,
        what,
    };
    let n = asg.rows().next_power_of_two();
    if n != srs.domain_size() {
        return Err(shape_err(format!(
            "{} constraints (with one row per input) need a domain of {n}; the parameters have {}",
            asg.rows(),
            srs.domain_size()
        )));
    }
    if asg.inputs.len() != srs.num_inputs() {
        return Err(shape_err(format!(
            "{} inputs (one included); the parameters have {}",
            asg.inputs.len(),
            srs.num_inputs()
        )));
    }
    if asg.aux.len() != srs.l().len() {
        return Err(shape_err(format!(
            "{} aux variables; the parameters' l has {}",
            asg.aux.len(),
            srs.l().len()
        )));
    }
    let a_dense = asg.inputs.len() + asg.a_aux_density.count_ones();
    if a_dense != srs.a().len() {
        return Err(shape_err(format!(
            "{a_dense} entries dense in A; the parameters' a has {}",
            srs.a().len()
        )));
    }
    let b_dense = asg.b_input_density.count_ones() + asg.b_aux_density.count_ones();
    if b_dense != srs.b_g1().len() {
        return Err(shape_err(format!(
            "{b_dense} entries dense in B; the parameters' b_g1 has {}",
            srs.b_g1().len()
        )));
    }
    let shape = asg.shape();
    if let Some(d) = asg.deferred {
        // The recorded path: the products `a`, `b`, `c` are left to the backend, and so are the
        // MSM scalar splits where it builds them from the witness it uploads
        // (`splits_on_device`); otherwise they are built here, on the synthesis thread (in
        // parallel across partitions), so the one upload thread per GPU only copies.
        // `l` zeroes the ones of its own copy; the witness stays whole for the products.
        let (l, a_query, b_query) = if opts.splits_on_device {
            Default::default()
        } else {
            splits(
                &asg.inputs,
                asg.aux.par_iter().copied().collect(),
                [&asg.a_aux_density, &asg.b_input_density, &asg.b_aux_density],
            )
        };
        let mut p = Prepared {
            index,
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            l,
            a_query,
            b_query,
            public_inputs: asg.inputs.get(1..).unwrap_or(&[]).to_vec(),
            shape,
            msm_chunk: None,
            stream: opts.stream,
            cancel: opts.cancel.clone(),
            recorded: Some(Recorded {
                rec: d.0,
                inputs: asg.inputs,
                aux: asg.aux,
                check_satisfied: opts.check_satisfied,
                splits_pending: opts.splits_on_device,
                packed: None,
            }),
        };
        if opts.products_on_host {
            p.complete_on_host()?;
        } else if opts.pack_witness || p.stream.is_some_and(|t| t.uploads_witness()) {
            // Here on the synthesis thread, while the GPU proves the partition before; a GPU's
            // uploader hands a streamed partition on only when its compute is free.
            p.pack_witness(crate::gather::side_threads());
        }
        return Ok(p);
    }
    if opts.check_satisfied {
        if let Some(row) = asg.first_unsatisfied() {
            return Err(unsatisfied(
                index,
                row,
                &asg.a[row],
                &asg.b[row],
                &asg.c[row],
            ));
        }
    }
    let Assignment {
        mut a,
        mut b,
        mut c,
        inputs,
        aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
        deferred: _,
    } = asg;
    // Zero-pad the evaluations to the domain, as the Backend's `compute_h` takes them.
    for v in [&mut a, &mut b, &mut c] {
        v.resize(n, Scalar::ZERO);
    }
    let (l, a_query, b_query) = splits(
        &inputs,
        aux,
        [&a_aux_density, &b_input_density, &b_aux_density],
    );
    Ok(Prepared {
        index,
        a,
        b,
        c,
        l,
        a_query,
        b_query,
        public_inputs: inputs.get(1..).unwrap_or(&[]).to_vec(),
        shape,
        msm_chunk: None,
        stream: opts.stream,
        cancel: opts.cancel.clone(),
        recorded: None,
    })
}

/// Stages, computes and collects one partition on `backend` (the three steps a pipeline runs on
/// its upload, compute and collector actors).
pub fn compute(
    p: Prepared,
    srs: &Srs,
    backend: &dyn Pipeline,
    t: &mut Timings,
) -> Result<(Sums, Vec<Scalar>), EngineError> {
    let staged = if backend.stages_on_device() {
        backend.stage(&p)?
    } else {
        Staged::on_host(p)
    };
    let computed = backend.compute(srs, staged, t)?;
    let inputs = computed.public_inputs.clone();
    Ok((backend.collect(computed, t)?, inputs))
}

/// The proof from the MSM sums and the randomness `r, s`, exactly as bellperson assembles it.
pub fn assemble(
    s: &Sums,
    vk: &VerifyingKey<Bls12>,
    r: Scalar,
    s_: Scalar,
) -> Result<Proof<Bls12>, EngineError> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(EngineError::Other("verifying key has δ at infinity".into()));
    }
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + s.a;
    let g_b = vk.delta_g2 * s_ + vk.beta_g2 + s.b_g2;
    let g_c = s.a * s_
        + s.b_g1 * r
        + vk.delta_g1 * (r * s_)
        + vk.alpha_g1 * s_
        + vk.beta_g1 * r
        + s.h
        + s.l;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}

/// Proofs of a batch, in partition order, with the public inputs they verify against.
#[derive(Debug, Clone)]
pub struct ProofBatch {
    pub proofs: Vec<Proof<Bls12>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    pub timings: Timings,
}

impl ProofBatch {
    /// The wire format: 192 bytes per partition (compressed A ‖ B ‖ C), concatenated in order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.proofs.len() * 192);
        for p in &self.proofs {
            // Writing into a Vec cannot fail.
            let _ = p.write(&mut out);
        }
        out
    }
}

/// Proves one circuit, or the partition circuits of one proof, against one parameter set.
pub struct Prover<'a> {
    pub srs: &'a Srs,
    pub backend: &'a dyn Pipeline,
    pub opts: ProveOptions,
    /// Where recordings are kept between proofs (`RecordingCache::global()` by default).
    pub recordings: &'a RecordingCache,
}

impl<'a> Prover<'a> {
    pub fn new(srs: &'a Srs, backend: &'a dyn Pipeline) -> Self {
        Prover {
            srs,
            backend,
            opts: ProveOptions::default(),
            recordings: RecordingCache::global(),
        }
    }

    /// Proves with caller-chosen randomness: `r_s[i], s_s[i]` for partition `i`.
    pub fn prove<C: Circuit<Scalar> + Send>(
        &self,
        circuits: Vec<C>,
        r_s: &[Scalar],
        s_s: &[Scalar],
    ) -> Result<ProofBatch, EngineError> {
        if r_s.len() != circuits.len() || s_s.len() != circuits.len() {
            return Err(EngineError::Other(format!(
                "{} circuits but {} r and {} s values",
                circuits.len(),
                r_s.len(),
                s_s.len()
            )));
        }
        let total = Instant::now();
        let mut t = Timings::default();
        let start = Instant::now();
        // The parameters fix the shape exactly: reserve it up front.
        let hint = Shape {
            constraints: self.srs.domain_size(),
            inputs: self.srs.num_inputs(),
            aux: self.srs.l().len(),
        };
        let assignments = if self.opts.recorded.enabled {
            self.recordings
                .synthesize_batch_deferred(self.srs, circuits, &self.opts.recorded)?
        } else {
            synthesize_batch(circuits, hint)?
        };
        t.synth_ms = ms(start);
        let verifier = if self.opts.self_verify {
            Some(Verifier::new(self.srs.vk()))
        } else {
            None
        };
        let mut batch = ProofBatch {
            proofs: Vec::new(),
            public_inputs: Vec::new(),
            timings: Timings::default(),
        };
        let opts = ProveOptions {
            splits_on_device: self.opts.splits_on_device || self.backend.splits_on_device(),
            ..self.opts.clone()
        };
        for (i, asg) in assignments.into_iter().enumerate() {
            let start = Instant::now();
            let prepared = prepare(i, asg, self.srs, &opts)?;
            t.prepare_ms += ms(start);
            let (sums, inputs) = compute(prepared, self.srs, self.backend, &mut t)?;
            let start = Instant::now();
            let proof = assemble(&sums, self.srs.vk(), r_s[i], s_s[i])?;
            t.assemble_ms += ms(start);
            if let Some(v) = &verifier {
                let start = Instant::now();
                if !v.verify(&proof, &inputs)? {
                    return Err(EngineError::SelfVerify { index: i });
                }
                t.verify_ms += ms(start);
            }
            batch.proofs.push(proof);
            batch.public_inputs.push(inputs);
        }
        t.total_ms = ms(total);
        batch.timings = t;
        Ok(batch)
    }

    /// Proves with `r, s` drawn from `rng`.
    pub fn prove_random<C: Circuit<Scalar> + Send>(
        &self,
        circuits: Vec<C>,
        rng: &mut dyn RngCore,
    ) -> Result<ProofBatch, EngineError> {
        let r_s: Vec<Scalar> = (0..circuits.len())
            .map(|_| Scalar::random(&mut *rng))
            .collect();
        let s_s: Vec<Scalar> = (0..circuits.len())
            .map(|_| Scalar::random(&mut *rng))
            .collect();
        self.prove(circuits, &r_s, &s_s)
    }
}

pub(crate) fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}
