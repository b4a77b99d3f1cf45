//! The `Backend` trait: the heavy steps of a Groth16 proof, cut so that a CPU or a GPU can do them.
//!
//! The prover (`prover.rs`) owns the math around these steps — synthesis, density filtering, the
//! 0/1 split of scalars, assembly with `r, s` — and never changes with the backend below it.
//!
//! Beside the heavy steps (`compute_h`, `msm_g1`, `msm_g2`, `batch_add_g1`, `batch_add_g2`), the
//! cut the pipeline drives, one stage per actor: `stage` / `stage_through` (upload, through the
//! caller's pinned staging buffers: [`copy_through`]), `compute` / `compute_then` (tells the
//! caller when the next partition may start), `collect`; and `evict_resident` and `memory` for
//! the VRAM budget. The defaults run everything on the host. [`COPY_PIECE`] says how host→device
//! copies are split.

use std::any::Any;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_srs::Srs;

use crate::error::EngineError;
use crate::prover::{Prepared, Split, Sums};
use crate::timings::Timings;

/// A device's memory, in bytes: `free` and `total` as `cuMemGetInfo` reports them, `ours` what
/// this process's allocator holds there (its memory pool's reserved bytes, used or kept for reuse).
/// What other processes (and the driver) hold is `total - free - ours`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemory {
    pub free: u64,
    pub total: u64,
    pub ours: u64,
}

impl DeviceMemory {
    /// Bytes held by others: other processes, the driver, this process outside its pool.
    pub fn others(&self) -> u64 {
        self.total
            .saturating_sub(self.free)
            .saturating_sub(self.ours)
    }
}

/// A bitmap over base indices: bit `i` (word `i / 64`, bit `i % 64`, LSB first) selects `bases[i]`.
pub type Bitmap = [u64];

/// A partition whose inputs the backend has made ready (a GPU backend: uploaded into device memory
/// reserved for it). The payload is the backend's own; another backend refuses it.
pub struct Staged {
    pub index: usize,
    pub public_inputs: Vec<Scalar>,
    pub payload: Box<dyn Any + Send>,
}

impl Staged {
    /// A partition kept on the host, as it is: what `compute` takes from a backend that does not
    /// stage on a device.
    pub fn on_host(p: Prepared) -> Staged {
        Staged {
            index: p.index,
            public_inputs: p.public_inputs.clone(),
            payload: Box::new(p),
        }
    }
}

/// A partition whose heavy steps have run or, on a GPU, are queued: its results may still be on
/// the device, and its kernels may still be running.
pub struct Computed {
    pub index: usize,
    pub public_inputs: Vec<Scalar>,
    /// The partition's device memory (its inputs, its results) stays in use until
    /// [`collect`](Backend::collect) has run (or the payload is dropped): a pipeline keeps the
    /// partition's device reservation until then.
    pub holds_device: bool,
    pub payload: Box<dyn Any + Send>,
}

impl Computed {
    /// Results already on the host.
    pub fn on_host(index: usize, public_inputs: Vec<Scalar>, sums: Sums) -> Computed {
        Computed {
            index,
            public_inputs,
            holds_device: false,
            payload: Box::new(sums),
        }
    }
}

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

    /// Whether [`stage`](Backend::stage) copies a partition to the device (then its host buffers
    /// are worth pinning for the copy). When `false`, callers skip `stage` and hand the partition
    /// over as [`Staged::on_host`].
    fn stages_on_device(&self) -> bool {
        false
    }

    /// Whether [`stage`](Backend::stage) builds a recorded partition's MSM scalar splits from the
    /// witness it uploads ([`Prepared::splits_pending`]), so synthesis may leave them out
    /// (`ProveOptions::splits_on_device`). Backends that compute on the host build pending splits
    /// in [`Prepared::complete_on_host`] either way; this only says where it is cheapest.
    fn splits_on_device(&self) -> bool {
        false
    }

    /// Makes a prepared partition ready for [`compute`](Backend::compute): a GPU backend uploads
    /// it here, on its copy stream. The caller keeps `p` (and any pinning of its buffers) alive
    /// until this returns, and frees it only after unpinning. The default copies it on the host.
    fn stage(&self, p: &Prepared) -> Result<Staged, EngineError> {
        Ok(Staged::on_host(p.clone()))
    }

    /// Bytes of page-locked staging memory [`stage_through`](Backend::stage_through) wants per
    /// buffer (it takes two), or 0 if it copies from the partition's own buffers (then callers
    /// pin those, or skip staging). Staging through buffers pinned once means no host memory is
    /// registered or unregistered per partition: the driver serialises those calls with the
    /// device's work (on an H200, unregistering a 2^23 partition's 2.3 GB stalled kernels,
    /// launches and copies for ~260 ms).
    fn staging_bytes(&self) -> usize {
        0
    }

    /// [`stage`](Backend::stage), copying through `staging` (page-locked buffers the caller owns
    /// and reuses; each at least [`staging_bytes`](Backend::staging_bytes) long). The default
    /// ignores them.
    fn stage_through(
        &self,
        p: &Prepared,
        staging: &mut [&mut [u8]],
    ) -> Result<Staged, EngineError> {
        let _ = staging;
        self.stage(p)
    }

    /// Runs H and the five MSMs of a staged partition. The default runs the heavy steps above
    /// one after the other.
    fn compute(&self, srs: &Srs, staged: Staged, t: &mut Timings) -> Result<Computed, EngineError> {
        let Staged {
            index,
            public_inputs,
            payload,
        } = staged;
        let p = payload
            .downcast::<Prepared>()
            .map_err(|_| foreign(self.name(), "staged"))?;
        let sums = run_steps(self, srs, *p, t)?;
        Ok(Computed::on_host(index, public_inputs, sums))
    }

    /// [`compute`](Backend::compute), calling `launched` once the next partition may be started
    /// (`PipelinedGpu`: its kernels are queued on the GPU's one kernel stream, so the next
    /// partition's kernels run right after them): from then on the caller's per-GPU turn may pass
    /// on. The default computes, then calls it.
    fn compute_then(
        &self,
        srs: &Srs,
        staged: Staged,
        t: &mut Timings,
        launched: &mut dyn FnMut(),
    ) -> Result<Computed, EngineError> {
        let r = self.compute(srs, staged, t);
        launched();
        r
    }

    /// Frees the device copy of the parameters this backend keeps resident (`PipelinedGpu`'s
    /// bases), if it keeps one, and returns the device bytes it held. The engine calls it on the
    /// device's UploadActor when the parameters are evicted and nothing is staged on the device;
    /// partitions still queued keep their own hold on the bases until they are collected. The
    /// default keeps nothing resident.
    fn evict_resident(&self) -> Result<u64, EngineError> {
        Ok(0)
    }

    /// The device's memory as the driver sees it now (`None`: a backend without device memory).
    /// The VRAM budget reads it before each reservation, so memory other processes take after
    /// the engine started shrinks what the engine admits instead of failing a kernel.
    fn memory(&self) -> Option<DeviceMemory> {
        None
    }

    /// Brings a computed partition's sums to the host (a GPU backend: waits for its kernels,
    /// then device→host copies and the final reductions); device-timed stages go into `t`.
    fn collect(&self, c: Computed, _t: &mut Timings) -> Result<Sums, EngineError> {
        c.payload
            .downcast::<Sums>()
            .map(|s| *s)
            .map_err(|_| foreign(self.name(), "computed"))
    }
}

/// Copies `src` through the staging buffers in turn: for each piece, `wait(i)` until buffer `i`
/// is free again (its previous copy is done), the piece is copied into it on the host (by up to
/// `threads` threads), then `send(i, offset, piece)` starts its transfer to byte `offset` of the
/// destination. Pieces are as long as the shortest buffer.
pub fn copy_through(
    staging: &mut [&mut [u8]],
    src: &[u8],
    threads: usize,
    next: &mut usize,
    mut wait: impl FnMut(usize) -> Result<(), EngineError>,
    mut send: impl FnMut(usize, usize, &[u8]) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let piece = staging.iter().map(|b| b.len()).min().unwrap_or(0);
    if piece == 0 {
        return Err(EngineError::Other(
            "staging through no (or empty) buffers".into(),
        ));
    }
    for (k, chunk) in src.chunks(piece).enumerate() {
        let i = *next % staging.len();
        *next += 1;
        wait(i)?;
        let dst = &mut staging[i][..chunk.len()];
        parallel_copy(dst, chunk, threads);
        send(i, k * piece, dst)?;
    }
    Ok(())
}

/// `dst.copy_from_slice(src)` by up to `threads` scoped threads (a single core copies ~5-10 GB/s;
/// the upload path needs more).
pub fn parallel_copy(dst: &mut [u8], src: &[u8], threads: usize) {
    const MIN: usize = 4 << 20;
    let parts = threads.clamp(1, 16).min(src.len().div_ceil(MIN)).max(1);
    if parts == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let step = src.len().div_ceil(parts);
    std::thread::scope(|sc| {
        for (d, s) in dst.chunks_mut(step).zip(src.chunks(step)) {
            sc.spawn(move || d.copy_from_slice(s));
        }
    });
}

/// Host-to-device copies of staged partitions are split at the absolute multiples of this many
/// bytes and at the first and last page boundary of each buffer; the HostPinner registers gaps in
/// chunks that are multiples of it and never cross one of its multiples. Together: every copy
/// piece lies within one registration (an asynchronous copy whose host range spans two
/// registrations fails with CUDA_ERROR_INVALID_VALUE).
pub const COPY_PIECE: usize = 64 << 20;

/// The host page the driver pins (and the HostPinner rounds registrations to).
pub const PAGE: usize = 4096;

/// The error for a partition `what` (staged, computed) by another backend than `backend`.
pub fn foreign(backend: &str, what: &str) -> EngineError {
    EngineError::Backend {
        backend: backend.into(),
        what: format!("partition was {what} by another backend"),
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
        ..
    } = p;
    let chunk = msm_chunk
        .or(stream.map(|t| t.chunk as usize))
        .unwrap_or(usize::MAX)
        .max(1);
    let start = Instant::now();
    let h_coeffs = b.compute_h(a, b_evals, c)?;
    let h = b.msm_g1(srs.h(), &h_coeffs)?;
    drop(h_coeffs);
    t.step("ntt_msm_h", start);
    let g1 =
        |bases: &[G1Affine], split: &Split, t: &mut Timings| -> Result<G1Projective, EngineError> {
            let start = Instant::now();
            let mut acc = msm_chunked(bases, &split.tail, chunk, |x, y| b.msm_g1(x, y))?;
            t.step("tail_msm", start);
            if split.ones.count_ones() > 0 {
                let start = Instant::now();
                acc += b.batch_add_g1(bases, split.ones.words())?;
                t.step("batch_add", start);
            }
            Ok(acc)
        };
    let l = g1(srs.l(), &l, t)?;
    let a = g1(srs.a(), &a_query, t)?;
    let b_g1 = g1(srs.b_g1(), &b_query, t)?;
    let start = Instant::now();
    let mut b_g2: G2Projective =
        msm_chunked(srs.b_g2(), &b_query.tail, chunk, |x, y| b.msm_g2(x, y))?;
    if b_query.ones.count_ones() > 0 {
        b_g2 += b.batch_add_g2(srs.b_g2(), b_query.ones.words())?;
    }
    t.step("b_g2_msm", start);
    Ok(Sums {
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// An MSM over bases in chunks of `chunk` points (the small-memory tier streams bases this way);
/// the sum of the chunks' results is the MSM.
fn msm_chunked<P, G: std::ops::AddAssign + group::Group>(
    bases: &[P],
    scalars: &[Scalar],
    chunk: usize,
    msm: impl Fn(&[P], &[Scalar]) -> Result<G, EngineError>,
) -> Result<G, EngineError> {
    if bases.len() <= chunk || bases.len() != scalars.len() {
        return msm(bases, scalars);
    }
    let mut acc = G::identity();
    for (b, s) in bases.chunks(chunk).zip(scalars.chunks(chunk)) {
        acc += msm(b, s)?;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_through_moves_every_byte_in_pieces_and_waits_before_reusing_a_buffer() {
        let src: Vec<u8> = (0..10_007u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for threads in [1, 3] {
            let (mut x, mut y, mut z) = (vec![0u8; 1000], vec![0u8; 700], vec![0u8; 900]);
            let mut staging: Vec<&mut [u8]> = vec![&mut x, &mut y, &mut z];
            let mut dst = vec![0u8; src.len()];
            let mut log = Vec::new();
            let mut next = 0;
            let log = std::cell::RefCell::new(&mut log);
            copy_through(
                &mut staging,
                &src,
                threads,
                &mut next,
                |i| {
                    log.borrow_mut().push(('w', i));
                    Ok(())
                },
                |i, at, piece| {
                    log.borrow_mut().push(('s', i));
                    assert!(
                        piece.len() <= 700,
                        "a piece longer than the shortest buffer"
                    );
                    dst[at..at + piece.len()].copy_from_slice(piece);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(dst, src);
            let log = log.into_inner();
            assert_eq!(log.len(), 2 * src.len().div_ceil(700));
            for (k, pair) in log.chunks(2).enumerate() {
                assert_eq!(
                    pair,
                    [('w', k % 3), ('s', k % 3)],
                    "piece {k}: buffers taken in turn, each waited for first"
                );
            }
            assert_eq!(next, src.len().div_ceil(700));
        }
        let mut none: Vec<&mut [u8]> = Vec::new();
        assert!(copy_through(&mut none, &src, 1, &mut 0, |_| Ok(()), |_, _, _| Ok(())).is_err());
    }

    #[test]
    fn parallel_copy_equals_copy_from_slice() {
        let src: Vec<u8> = (0..(9 << 20) + 5).map(|i: usize| (i % 251) as u8).collect();
        for threads in [1, 2, 7] {
            let mut dst = vec![0u8; src.len()];
            parallel_copy(&mut dst, &src, threads);
            assert!(dst == src, "{threads} threads");
        }
    }
}
