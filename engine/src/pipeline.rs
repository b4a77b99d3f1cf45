//! The `Pipeline` trait: a [`Backend`] the actor pipeline drives, one stage per actor.
//!
//! The cut: a backend does the math ([`Backend`]: H and the MSMs, call by call); a pipeline
//! backend also stages, computes and collects one partition per actor and reports its device
//! memory. Its hooks: `stage` / `stage_through` (the UploadActor: upload, through the caller's
//! pinned staging buffers: [`copy_through`]), `compute` / `compute_then` (the ComputeActor; tells
//! the caller when the next partition may start), `collect` (the MsmCollector); and
//! `evict_resident` and `memory` ([`DeviceMemory`]: the device as the driver sees it, with the
//! bytes this process holds there) for the VRAM budget. A partition moves between the stages as
//! [`Staged`] and [`Computed`], whose payloads are the backend's own.
//!
//! The defaults run everything on the host: a backend without a device implements `Pipeline`
//! with no methods. [`COPY_PIECE`] and [`PAGE`] say how host→device copies are split.

use std::any::Any;

use blstrs::Scalar;
use cuzk_srs::Srs;

use crate::backend::{run_steps, Backend};
use crate::error::EngineError;
use crate::prover::{Prepared, Sums};
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
    /// [`collect`](Pipeline::collect) has run (or the payload is dropped): a pipeline keeps the
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

/// The hooks the actor pipeline calls on a backend, a partition at a time (upload, compute,
/// collect), and the device memory the VRAM budget reads. Every default runs on the host.
pub trait Pipeline: Backend {
    /// Whether [`stage`](Pipeline::stage) copies a partition to the device (then its host buffers
    /// are worth pinning for the copy). When `false`, callers skip `stage` and hand the partition
    /// over as [`Staged::on_host`].
    fn stages_on_device(&self) -> bool {
        false
    }

    /// Whether [`stage`](Pipeline::stage) builds a recorded partition's MSM scalar splits from the
    /// witness it uploads ([`Prepared::splits_pending`]), so synthesis may leave them out
    /// (`ProveOptions::splits_on_device`). Backends that compute on the host build pending splits
    /// in [`Prepared::complete_on_host`] either way; this only says where it is cheapest.
    fn splits_on_device(&self) -> bool {
        false
    }

    /// Makes a prepared partition ready for [`compute`](Pipeline::compute): a GPU backend uploads
    /// it here, on its copy stream. The caller keeps `p` (and any pinning of its buffers) alive
    /// until this returns, and frees it only after unpinning. The default copies it on the host.
    fn stage(&self, p: &Prepared) -> Result<Staged, EngineError> {
        Ok(Staged::on_host(p.clone()))
    }

    /// Bytes of page-locked staging memory [`stage_through`](Pipeline::stage_through) wants per
    /// buffer (it takes two), or 0 if it copies from the partition's own buffers (then callers
    /// pin those, or skip staging). Staging through buffers pinned once means no host memory is
    /// registered or unregistered per partition: the driver serialises those calls with the
    /// device's work (on an H200, unregistering a 2^23 partition's 2.3 GB stalled kernels,
    /// launches and copies for ~260 ms).
    fn staging_bytes(&self) -> usize {
        0
    }

    /// [`stage`](Pipeline::stage), copying through `staging` (page-locked buffers the caller owns
    /// and reuses; each at least [`staging_bytes`](Pipeline::staging_bytes) long). The default
    /// ignores them.
    fn stage_through(
        &self,
        p: &Prepared,
        staging: &mut [&mut [u8]],
    ) -> Result<Staged, EngineError> {
        let _ = staging;
        self.stage(p)
    }

    /// Runs H and the five MSMs of a staged partition. The default runs the backend's heavy
    /// steps one after the other ([`run_steps`]).
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

    /// [`compute`](Pipeline::compute), calling `launched` once the next partition may be started
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
