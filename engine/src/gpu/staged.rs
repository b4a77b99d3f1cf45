//! `PipelinedGpu`: the CUDA backend as the actor pipeline drives it.
//!
//! - `stage` uploads a partition's a, b, c, MSM scalars and one-bitmaps on a copy stream of its
//!   own (from host memory the HostPinner pinned), so partition k+1's upload overlaps partition
//!   k's kernels;
//! - the SRS bases are uploaded once per parameter set and stay resident on the device;
//! - on the recorded path (`Prepared::recorded`), only the witness is uploaded: the shape's
//!   matrices are resident (`DeviceRecording`, one per shape per GPU), `a`, `b`, `c` are computed
//!   from the witness on the copy stream and every row checked there, and the MSM scalar splits
//!   built there too where `prepare` left them (`Prepared::splits_pending`), before `compute`;
//!   `memory` reports the resident recordings as held by others, so the VRAM budget leaves room
//!   for them;
//! - `compute` queues H and every MSM of a partition, from device memory only (H's coefficients
//!   never leave the device before the H-MSM), on the GPU's one kernel stream, with no host
//!   synchronisation, and returns at once: the partition's kernels run right after the previous
//!   partition's (never beside them), and the caller may queue the next partition while they run;
//! - `collect` (the MsmCollector's thread) waits for the partition's last kernel, reads the sums
//!   back on a stream of its own while the GPU goes on with the next partition, combines them,
//!   places the device-timed steps on the host clock (`GpuDevice::host_time`), and only then
//!   frees the partition's device memory;
//! - a partition of the streamed tier (`Prepared::stream`) runs `compute_streamed`
//!   (`streamed.rs`) instead;
//! - `evict_resident` frees the resident bases (their own pool, `OwnPool`) after the kernel
//!   stream, then trims the default pool.
//!
//! The heavy steps one by one (`compute_h`, `msm_g1`, …) are the plain `GpuBackend`'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::CudaStream;
use cuzk_srs::Srs;

use super::batch_add::{batch_add_queued, read_sum};
use super::buf::DevBuf;
use super::copy_pieces::copy_pieces;
use super::h::{compute_h_device, HDomain};
use super::msm::QueuedMsm;
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::spmv::{DeviceRecording, DeviceSplit};
use super::{as_bytes, as_bytes_mut, backend_err, GpuBackend, GpuDevice, Result};
use crate::backend::{Backend, Bitmap};
use crate::pipeline::{Computed, DeviceMemory, Pipeline, Staged, COPY_PIECE};
use crate::prover::{unsatisfied, Prepared, Recorded, Split, Sums};
use crate::recorded::Recording;
use crate::timings::Timings;

/// A partition on the device.
struct OnDevice {
    a: DevBuf,
    b: DevBuf,
    c: DevBuf,
    log_n: u32,
    l: DeviceSplit,
    a_query: DeviceSplit,
    b_query: DeviceSplit,
    /// The partition's cancellation, checked before its kernels are queued.
    cancel: crate::cancel::Cancel,
}

/// An SRS's proving bases on the device, and what identifies the SRS they came from.
pub(super) struct Resident {
    key: (usize, usize, usize, [u8; 96]),
    pub(super) h: DevBuf,
    pub(super) l: DevBuf,
    pub(super) a: DevBuf,
    pub(super) b_g1: DevBuf,
    pub(super) b_g2: DevBuf,
}

pub struct PipelinedGpu {
    inner: GpuBackend,
    copy: Arc<CudaStream>,
    /// The copy stream as a device handle, for the recorded path's kernels at staging.
    copy_dev: GpuDevice,
    /// Recordings' matrices resident on this GPU, by shape hash.
    recordings: Mutex<HashMap<[u8; 32], Arc<DeviceRecording>>>,
    resident: Mutex<Option<Arc<Resident>>>,
    /// Where the resident bases live: a pool of their own, so that evicting them gives all of
    /// their memory back to the device (in the default pool they could share chunks with
    /// buffers that outlive them). `None` without a stream-ordered allocator.
    resident_pool: Option<super::pool::OwnPool>,
    domains: Mutex<HashMap<u32, Arc<HDomain>>>,
    /// Serialises the queueing of partitions (and the resident-SRS and domain caches).
    compute_lock: Mutex<()>,
    /// The GPU's one kernel stream: every partition's kernels, in the order they were queued.
    pub(super) kernels: GpuDevice,
    /// The streamed tier's copy stream (`streamed.rs`) and its page-locked copy ring, made on
    /// first use.
    pub(super) stream_copy: GpuDevice,
    pub(super) ring: Mutex<Option<super::ring::Ring>>,
    /// The collector's stream, for reading sums back while the kernel stream goes on.
    readback: GpuDevice,
}

fn srs_key(srs: &Srs) -> (usize, usize, usize, [u8; 96]) {
    let mut first = [0u8; 96];
    if let Some(p) = srs.h().first().or(srs.l().first()) {
        first.copy_from_slice(as_bytes(std::slice::from_ref(p)));
    }
    (
        srs.h().as_ptr() as usize,
        srs.h().len(),
        srs.l().len(),
        first,
    )
}

impl PipelinedGpu {
    pub fn new(ordinal: usize) -> Result<Self> {
        let inner = GpuBackend::new(ordinal)?;
        let copy_dev = inner.device().fork()?;
        let copy = copy_dev.stream.clone();
        let kernels = inner.device().fork()?;
        let readback = inner.device().fork()?;
        let stream_copy = inner.device().fork()?;
        let resident_pool = super::pool::OwnPool::new(&inner.device().ctx)
            // Only a cost: the bases then share the default pool, and an eviction may leave
            // part of their memory there.
            .map_err(|e| log::warn!("{e}; the resident SRS bases use the default pool"))
            .ok()
            .flatten();
        Ok(PipelinedGpu {
            inner,
            copy,
            copy_dev,
            recordings: Mutex::new(HashMap::new()),
            resident: Mutex::new(None),
            resident_pool,
            domains: Mutex::new(HashMap::new()),
            compute_lock: Mutex::new(()),
            kernels,
            stream_copy,
            ring: Mutex::new(None),
            readback,
        })
    }

    pub fn inner(&self) -> &GpuBackend {
        &self.inner
    }

    /// Uploads `bytes` on the copy stream (not waiting for the copies), from `src`.
    fn put(&self, bytes: &[u8], what: &str, src: &mut Src) -> Result<DevBuf> {
        self.put_parts(&[bytes], what, src)
    }

    /// Uploads `parts` one after the other into one buffer on the copy stream (not waiting for
    /// the copies), from `src`.
    fn put_parts(&self, parts: &[&[u8]], what: &str, src: &mut Src) -> Result<DevBuf> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        // SAFETY: the whole allocation is written by the copies below before any read.
        let mut s = unsafe { self.copy.alloc::<u8>(total.max(1)) }
            .map_err(|e| backend_err(format!("allocating {total} bytes for {what}: {e:?}")))?;
        let mut base = 0;
        for bytes in parts {
            self.put_at(&mut s, base, bytes, what, src)?;
            base += bytes.len();
        }
        Ok(DevBuf::from_slice(s))
    }

    /// Queues the copy of `bytes` to byte `base` of `s`.
    fn put_at(
        &self,
        s: &mut cudarc::driver::CudaSlice<u8>,
        base: usize,
        bytes: &[u8],
        what: &str,
        src: &mut Src,
    ) -> Result<()> {
        match src {
            Src::Pinned => {
                for (lo, hi) in copy_pieces(bytes.as_ptr() as usize, bytes.len()) {
                    let mut view = s.slice_mut(base + lo..base + hi);
                    self.copy
                        .memcpy_htod(&bytes[lo..hi], &mut view)
                        .map_err(|e| {
                            backend_err(format!("upload of {what} (bytes {lo}..{hi}): {e:?}"))
                        })?;
                }
            }
            Src::Through { bufs, busy, next } => {
                let busy = std::cell::RefCell::new(busy);
                let s = std::cell::RefCell::new(s);
                let wait = |i: usize| -> Result<()> {
                    if let Some(ev) = busy.borrow_mut()[i].take() {
                        ev.synchronize().map_err(|e| {
                            backend_err(format!(
                                "upload of {what}: waiting for staging buffer {i}: {e:?}"
                            ))
                        })?;
                    }
                    Ok(())
                };
                let send = |i: usize, at: usize, piece: &[u8]| -> Result<()> {
                    let mut s = s.borrow_mut();
                    let mut view = s.slice_mut(base + at..base + at + piece.len());
                    self.copy.memcpy_htod(piece, &mut view).map_err(|e| {
                        backend_err(format!(
                            "upload of {what} (bytes {at}..{}): {e:?}",
                            at + piece.len()
                        ))
                    })?;
                    let ev = self
                        .copy
                        .record_event(Some(super::device::wait_event_flags()))
                        .map_err(|e| backend_err(format!("upload of {what}: event: {e:?}")))?;
                    busy.borrow_mut()[i] = Some(ev);
                    Ok(())
                };
                crate::pipeline::copy_through(bufs, bytes, copy_threads(), next, wait, send)?;
            }
        }
        Ok(())
    }

    fn put_split(&self, s: &Split, what: &str, src: &mut Src) -> Result<DeviceSplit> {
        let ones = if s.ones.count_ones() > 0 {
            Some(self.put(as_bytes(s.ones.words()), what, src)?)
        } else {
            None
        };
        Ok(DeviceSplit {
            tail: self.put(as_bytes(&s.tail), what, src)?,
            n: s.tail.len() as u64,
            live: s.nonzero_tail(),
            ones,
        })
    }

    /// Uploads a partition's inputs on the copy stream and waits for the copies, also when one
    /// fails: the caller frees (or unpins, or reuses as staging) the host memory they read as
    /// soon as this returns.
    fn stage_from(&self, p: &Prepared, src: &mut Src) -> Result<Staged> {
        let staged = self.queue_uploads(p, src);
        if staged.is_err() {
            let _ = self.copy.synchronize();
        }
        staged
    }

    fn queue_uploads(&self, p: &Prepared, src: &mut Src) -> Result<Staged> {
        if let (Some(r), None) = (
            &p.recorded,
            p.msm_chunk.or(p.stream.map(|t| t.chunk as usize)),
        ) {
            return self.queue_recorded(p, r, src);
        }
        if p.stream.is_some() || p.msm_chunk.is_some() {
            // The streamed tier (or the chunked one): too large to stage whole; `compute` runs
            // the steps one after another, the bases streamed in chunks.
            return Ok(Staged::on_host(p.clone()));
        }
        let n = p.a.len();
        if n < 2 || !n.is_power_of_two() || p.b.len() != n || p.c.len() != n {
            return Err(backend_err(format!(
                "stage: a, b, c have {}, {}, {} elements; need one power of two ≥ 2",
                n,
                p.b.len(),
                p.c.len()
            )));
        }
        let on = OnDevice {
            a: self.put(as_bytes(&p.a), "a", src)?,
            b: self.put(as_bytes(&p.b), "b", src)?,
            c: self.put(as_bytes(&p.c), "c", src)?,
            log_n: n.trailing_zeros(),
            l: self.put_split(&p.l, "l scalars", src)?,
            a_query: self.put_split(&p.a_query, "a scalars", src)?,
            b_query: self.put_split(&p.b_query, "b scalars", src)?,
            cancel: p.cancel.clone(),
        };
        // The copies are done when this returns: compute (another stream) may read them, and the
        // caller may unpin and free the host buffers (or reuse the staging buffers).
        self.copy
            .synchronize()
            .map_err(|e| backend_err(format!("copy stream: {e:?}")))?;
        Ok(Staged {
            index: p.index,
            public_inputs: p.public_inputs.clone(),
            payload: Box::new(on),
        })
    }

    /// The recorded path: only the witness crosses PCIe; `a`, `b`, `c` are computed from it on
    /// the device with the shape's resident matrices, and every row checked there.
    fn queue_recorded(&self, p: &Prepared, r: &Recorded, src: &mut Src) -> Result<Staged> {
        let rows = r.rec.counts().rows();
        let n = rows.next_power_of_two().max(2);
        let dr = self.device_recording(&r.rec)?;
        let dev = &self.copy_dev;
        let w = self.put_parts(&[as_bytes(&r.inputs), as_bytes(&r.aux)], "witness", src)?;
        let products = dr.products(dev, &w, n)?;
        if r.check_satisfied {
            if let Some(row) = dr.first_unsatisfied(dev, &products)? {
                let mut v = [<Scalar as ff::Field>::ZERO; 3];
                for (m, out) in products.iter().zip(v.iter_mut()) {
                    dev.download(
                        m,
                        32 * row,
                        as_bytes_mut(std::slice::from_mut(out)),
                        "unsatisfied row",
                    )?;
                }
                return Err(unsatisfied(p.index, row, &v[0], &v[1], &v[2]));
            }
        }
        let [a, b, c] = products;
        let (l, a_query, b_query) = if r.splits_pending {
            // From the uploaded witness, on the copy stream: nothing more crosses PCIe.
            let [l, a, b] = dr.splits(dev, &w)?;
            (l, a, b)
        } else {
            // Built by `prepare`, on the synthesis thread.
            (
                self.put_split(&p.l, "l scalars", src)?,
                self.put_split(&p.a_query, "a scalars", src)?,
                self.put_split(&p.b_query, "b scalars", src)?,
            )
        };
        let on = OnDevice {
            a,
            b,
            c,
            log_n: n.trailing_zeros(),
            l,
            a_query,
            b_query,
            cancel: p.cancel.clone(),
        };
        self.copy
            .synchronize()
            .map_err(|e| backend_err(format!("copy stream: {e:?}")))?;
        drop(w);
        Ok(Staged {
            index: p.index,
            public_inputs: p.public_inputs.clone(),
            payload: Box::new(on),
        })
    }

    /// The recording's matrices on this GPU, uploaded on first use of the shape and kept.
    pub(super) fn device_recording(&self, rec: &Recording) -> Result<Arc<DeviceRecording>> {
        let mut held = self
            .recordings
            .lock()
            .map_err(|_| backend_err("device recording cache poisoned"))?;
        if let Some(d) = held.get(rec.shape_hash()) {
            return Ok(d.clone());
        }
        let d = Arc::new(DeviceRecording::upload(&self.copy_dev, rec)?);
        self.copy_dev.sync("uploading a recording")?;
        log::info!(
            "{}: recording of {} rows resident ({} bytes)",
            self.inner.name(),
            rec.counts().rows(),
            d.bytes()
        );
        held.insert(*rec.shape_hash(), d.clone());
        Ok(d)
    }

    /// Device bytes the recordings resident on this GPU hold.
    pub fn recording_bytes(&self) -> u64 {
        self.recordings
            .lock()
            .map(|h| h.values().map(|d| d.bytes()).sum())
            .unwrap_or(0)
    }

    /// The SRS's bases on the device, uploaded on first use (one parameter set at a time).
    pub(super) fn resident(&self, srs: &Srs) -> Result<Arc<Resident>> {
        let key = srs_key(srs);
        let mut slot = self
            .resident
            .lock()
            .map_err(|_| backend_err("resident SRS cache poisoned"))?;
        if let Some(r) = slot.as_ref().filter(|r| r.key == key) {
            return Ok(r.clone());
        }
        let dev = self.inner.device();
        if slot.take().is_some() {
            // Free the previous set first (queued partitions hold it until collected), and give
            // its memory back (the pool keeps freed memory).
            self.kernels.sync("freeing the previous resident SRS")?;
            dev.sync("freeing the previous resident SRS")?;
            if let Err(e) = super::pool::trim(&dev.ctx, 0) {
                // Only a cost: the pool keeps the old set's memory for later allocations.
                log::warn!("{e}; the previous resident SRS's memory stays in the pool");
            }
        }
        let r = Arc::new(Resident {
            key,
            h: self.upload_resident(as_bytes(srs.h()), "resident h bases")?,
            l: self.upload_resident(as_bytes(srs.l()), "resident l bases")?,
            a: self.upload_resident(as_bytes(srs.a()), "resident a bases")?,
            b_g1: self.upload_resident(as_bytes(srs.b_g1()), "resident b_g1 bases")?,
            b_g2: self.upload_resident(as_bytes(srs.b_g2()), "resident b_g2 bases")?,
        });
        dev.sync("resident SRS upload")?;
        *slot = Some(r.clone());
        Ok(r)
    }

    /// `bytes` on the device in the resident pool (not waiting for the copy).
    fn upload_resident(&self, bytes: &[u8], what: &str) -> Result<DevBuf> {
        let dev = self.inner.device();
        let Some(pool) = &self.resident_pool else {
            return dev.upload(bytes, what);
        };
        // SAFETY: the whole buffer is written by the copy below before any kernel reads it.
        let mut b = DevBuf::from_slice(unsafe { pool.alloc(&dev.stream, bytes.len(), what)? });
        dev.upload_into(&mut b, 0, bytes, what)?;
        Ok(b)
    }

    pub(super) fn domain(&self, log_n: u32) -> Result<Arc<HDomain>> {
        let mut d = self
            .domains
            .lock()
            .map_err(|_| backend_err("domain cache poisoned"))?;
        if let Some(x) = d.get(&log_n) {
            return Ok(x.clone());
        }
        let x = Arc::new(HDomain::new(self.inner.device(), log_n)?);
        // Built on the backend's own stream; the workers' streams read it.
        self.inner.device().sync("building the NTT domain")?;
        d.insert(log_n, x.clone());
        Ok(x)
    }
}

/// Each staging buffer's size: a copy piece (64 MiB moves in ~1.2 ms at 55 GB/s).
const STAGING_BYTES: usize = COPY_PIECE;

/// Threads that fill a staging buffer on the host.
fn copy_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .clamp(1, 8)
}

/// Where `stage` copies from: the partition's own buffers (pinned by the caller, each copy
/// within one registration), or page-locked staging buffers in turn (`busy[i]`: the copy still
/// reading buffer i).
enum Src<'s, 'b> {
    Pinned,
    Through {
        bufs: &'s mut [&'b mut [u8]],
        busy: Vec<Option<cudarc::driver::CudaEvent>>,
        next: usize,
    },
}

/// Waits for the kernel stream when dropped, unless disarmed: on a way out of `compute` with some
/// of a partition's kernels queued, its buffers must not be freed under them.
struct QuietOnDrop<'a>(&'a super::GpuDevice, bool);

impl Drop for QuietOnDrop<'_> {
    fn drop(&mut self) {
        if self.1 {
            let _ = self.0.sync("waiting for the partition's kernels");
        }
    }
}

/// A partition whose kernels are queued on the kernel stream: everything they read or write
/// stays alive until they are done (dropping it waits for them first).
struct Pending {
    end: cudarc::driver::CudaEvent,
    /// Events between the steps, with the name of the step each one ends.
    marks: Vec<(&'static str, cudarc::driver::CudaEvent)>,
    sums: Option<(Option<QueuedMsm>, Queued, Queued, Queued, Queued)>,
    _inputs: OnDevice,
    _resident: Arc<Resident>,
    _domain: Arc<HDomain>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        // The fields (device buffers) drop after this: not before the kernels are done, and with
        // the context current on this thread (the collector's, or whoever drops a cancelled one).
        let _ = self.end.context().bind_to_thread();
        let _ = self.end.synchronize();
    }
}

fn check(what: &str, bases: usize, scalars: u64) -> Result<()> {
    if bases as u64 != scalars {
        return Err(backend_err(format!(
            "{what}: the parameters have {bases} bases, the partition {scalars} scalars"
        )));
    }
    Ok(())
}

impl Backend for PipelinedGpu {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>> {
        self.inner.compute_h(a, b, c)
    }
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective> {
        self.inner.msm_g1(bases, scalars)
    }
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective> {
        self.inner.msm_g2(bases, scalars)
    }
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective> {
        self.inner.batch_add_g1(bases, bits)
    }
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective> {
        self.inner.batch_add_g2(bases, bits)
    }
}

impl Pipeline for PipelinedGpu {
    fn memory(&self) -> Option<DeviceMemory> {
        // The resident recordings (matrices and query gathers: 9.56 GB at 32 GiB PoRep) are
        // held outside every reservation, so they count as held by others: the budget admits
        // only what is left beside them.
        let held = self.recording_bytes();
        let resident = match &self.resident_pool {
            Some(p) => p.reserved(),
            None => Ok(0),
        };
        resident
            .and_then(|r| {
                crate::gpu::pool::memory(&self.inner.device().ctx).map(|mut m| {
                    m.ours = (m.ours + r).saturating_sub(held);
                    m
                })
            })
            .map_err(|e| log::warn!("{e}: the VRAM budget keeps its last reading"))
            .ok()
    }

    fn stages_on_device(&self) -> bool {
        true
    }

    fn splits_on_device(&self) -> bool {
        true
    }

    fn evict_resident(&self) -> Result<u64> {
        // Not while a partition is being queued (it may be taking the bases right now).
        let _g = self
            .compute_lock
            .lock()
            .map_err(|_| backend_err("compute lock poisoned"))?;
        let taken = self
            .resident
            .lock()
            .map_err(|_| backend_err("resident SRS cache poisoned"))?
            .take();
        let Some(r) = taken else {
            return Ok(0);
        };
        let bytes = [&r.h, &r.l, &r.a, &r.b_g1, &r.b_g2]
            .iter()
            .map(|b| b.len() as u64)
            .sum();
        let dev = self.inner.device();
        dev.ctx
            .bind_to_thread()
            .map_err(|e| backend_err(format!("binding the GPU's context: {e:?}")))?;
        // Kernels already queued read the bases (and partitions not yet collected keep their own
        // hold on them): free after them. Their own pool gives their memory back once the stream
        // has passed the frees; the default pool keeps what it freed, so trim it too.
        self.kernels.sync("freeing the resident SRS")?;
        drop(r);
        dev.sync("freeing the resident SRS")?;
        if let Err(e) = super::pool::trim(&dev.ctx, 0) {
            log::warn!("{e}; the evicted SRS's memory stays in the pool");
        }
        Ok(bytes)
    }

    fn stage(&self, p: &Prepared) -> Result<Staged> {
        self.stage_from(p, &mut Src::Pinned)
    }

    fn staging_bytes(&self) -> usize {
        STAGING_BYTES
    }

    fn stage_through(&self, p: &Prepared, staging: &mut [&mut [u8]]) -> Result<Staged> {
        let busy = (0..staging.len()).map(|_| None).collect();
        self.stage_from(
            p,
            &mut Src::Through {
                bufs: staging,
                busy,
                next: 0,
            },
        )
    }

    fn compute(&self, srs: &Srs, staged: Staged, t: &mut Timings) -> Result<Computed> {
        self.compute_then(srs, staged, t, &mut || {})
    }

    fn compute_then(
        &self,
        srs: &Srs,
        staged: Staged,
        t: &mut Timings,
        launched: &mut dyn FnMut(),
    ) -> Result<Computed> {
        let Staged {
            index,
            public_inputs,
            payload,
        } = staged;
        let on = match payload.downcast::<OnDevice>() {
            Ok(on) => *on,
            // Staged on the host (e.g. by a caller that skipped `stage`): the heavy steps one by one.
            Err(other) => {
                let p = other
                    .downcast::<Prepared>()
                    .map_err(|_| backend_err("partition was staged by another backend"))?;
                // A cancelled partition stops here, before any of its steps.
                p.cancel.check()?;
                if let Some(tier) = p.stream {
                    // The streamed tier holds the GPU for the whole partition: its steps share
                    // the card's memory one after another.
                    let _g = self
                        .compute_lock
                        .lock()
                        .map_err(|_| backend_err("compute lock poisoned"))?;
                    let sums = self.compute_streamed(srs, *p, tier, t);
                    launched();
                    return Ok(Computed::on_host(index, public_inputs, sums?));
                }
                let sums = crate::backend::run_steps(self, srs, *p, t);
                launched();
                return Ok(Computed::on_host(index, public_inputs, sums?));
            }
        };
        // A cancelled partition stops at this stage boundary: nothing of it is queued yet.
        on.cancel.check()?;
        let dev = &self.kernels;
        // Queue every kernel of the partition on the kernel stream, under the lock; nothing here
        // waits for the GPU (but the first use of an SRS or a domain size).
        let pending = {
            let _g = self
                .compute_lock
                .lock()
                .map_err(|_| backend_err("compute lock poisoned"))?;
            let r = self.resident(srs)?;
            let n = 1u64 << on.log_n;
            if srs.h().len() as u64 != n - 1 {
                return Err(backend_err(format!(
                    "the partition's domain is {n}; the parameters' h has {} points",
                    srs.h().len()
                )));
            }
            check("l", srs.l().len(), on.l.n)?;
            check("a", srs.a().len(), on.a_query.n)?;
            check("b", srs.b_g1().len(), on.b_query.n)?;
            let d = self.domain(on.log_n)?;
            // From the first kernel on, an error must not free the inputs under queued kernels.
            let mut quiet = QuietOnDrop(dev, true);

            let mut marks = vec![("", dev.mark()?)];
            compute_h_device(dev, &d, on.a.ptr(), on.b.ptr(), on.c.ptr())?;
            marks.push(("ntt_h", dev.mark()?));
            let h = QueuedMsm::queue(dev, Curve::G1, &r.h, &on.b, n - 1)?;
            marks.push(("msm_h", dev.mark()?));
            let mut g1 = |bases: &DevBuf,
                          s: &DeviceSplit,
                          curve: Curve,
                          tail: &'static str,
                          ones: &'static str|
             -> Result<Queued> {
                let msm = QueuedMsm::queue_sparse(dev, curve, bases, &s.tail, s.n, s.live)?;
                marks.push((tail, dev.mark()?));
                let sum = match &s.ones {
                    Some(bits) if s.n > 0 => Some(batch_add_queued(dev, curve, bases, bits, s.n)?),
                    _ => None,
                };
                marks.push((ones, dev.mark()?));
                Ok(Queued { msm, ones: sum })
            };
            let l = g1(&r.l, &on.l, Curve::G1, "tail_msm", "batch_add")?;
            let a = g1(&r.a, &on.a_query, Curve::G1, "tail_msm", "batch_add")?;
            let b_g1 = g1(&r.b_g1, &on.b_query, Curve::G1, "tail_msm", "batch_add")?;
            let b_g2 = g1(&r.b_g2, &on.b_query, Curve::G2, "b_g2_msm", "b_g2_msm")?;
            let end = dev.mark()?;
            quiet.1 = false;
            Pending {
                end,
                marks,
                sums: Some((h, l, a, b_g1, b_g2)),
                _inputs: on,
                _resident: r,
                _domain: d,
            }
        };
        // The next partition's kernels queue behind these on the same stream: the GPU runs one
        // partition at a time, with no gap between them.
        launched();
        Ok(Computed {
            index,
            public_inputs,
            holds_device: true,
            payload: Box::new(pending),
        })
    }

    fn collect(&self, c: Computed, t: &mut Timings) -> Result<Sums> {
        let mut p = match c.payload.downcast::<Pending>() {
            Ok(p) => p,
            Err(other) => {
                return other
                    .downcast::<Sums>()
                    .map(|s| *s)
                    .map_err(|_| backend_err("partition was computed by another backend"))
            }
        };
        p.end
            .context()
            .bind_to_thread()
            .map_err(|e| backend_err(format!("binding the GPU's context: {e:?}")))?;
        p.end
            .synchronize()
            .map_err(|e| backend_err(format!("waiting for the partition's kernels: {e:?}")))?;
        // The steps as the GPU ran them, on the host clock.
        let k = &self.kernels;
        for w in p.marks.windows(2) {
            t.span(w[1].0, k.host_time(&w[0].1)?, k.host_time(&w[1].1)?);
        }
        let read_back = Instant::now();
        let (h, l, a, b_g1, b_g2) = p
            .sums
            .take()
            .ok_or_else(|| backend_err("partition collected twice"))?;
        let dev = &self.readback;
        let sums = Sums {
            h: QueuedMsm::g1(h, dev)?,
            l: l.g1(dev)?,
            a: a.g1(dev)?,
            b_g1: b_g1.g1(dev)?,
            b_g2: b_g2.g2(dev)?,
        };
        t.span("dtoh", read_back, Instant::now());
        Ok(sums)
    }
}

/// One MSM with its batch addition, queued.
struct Queued {
    msm: Option<QueuedMsm>,
    ones: Option<DevBuf>,
}

impl Queued {
    /// The MSM plus the batch addition, read back (waits for the stream).
    fn g1(self, dev: &GpuDevice) -> Result<G1Projective> {
        let mut acc = QueuedMsm::g1(self.msm, dev)?;
        if let Some(s) = self.ones {
            acc += g1_from_xyzz(&read_sum(dev, &s, Curve::G1)?);
        }
        Ok(acc)
    }
    fn g2(self, dev: &GpuDevice) -> Result<G2Projective> {
        let mut acc = QueuedMsm::g2(self.msm, dev)?;
        if let Some(s) = self.ones {
            acc += g2_from_xyzz(&read_sum(dev, &s, Curve::G2)?);
        }
        Ok(acc)
    }
}
