//! `PipelinedGpu`: the CUDA backend as the actor pipeline drives it.
//!
//! - `stage` uploads a partition's a, b, c, MSM scalars and one-bitmaps on a copy stream of its
//!   own (from host memory the HostPinner pinned), so partition k+1's upload overlaps partition
//!   k's kernels;
//! - the SRS bases are uploaded once per parameter set and stay resident on the device;
//! - `compute` runs H and every MSM from device memory only (H's coefficients never leave the
//!   device before the H-MSM), on a stream of the calling worker's own: it queues all of the
//!   partition's kernels under the per-GPU lock with no host synchronisation in between, waits
//!   for them, and then says so (`compute_then`'s `launched`) before reading the sums back and
//!   combining them, so a second worker's partition launches while the first one's results come
//!   back. The GPU runs one partition at a time.
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
use super::h::{compute_h_device, HDomain};
use super::msm::QueuedMsm;
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::{as_bytes, backend_err, GpuBackend, GpuDevice, Result};
use crate::backend::{Backend, Bitmap, Computed, Staged, COPY_PIECE, PAGE};
use crate::prover::{Prepared, Split, Sums};
use crate::timings::Timings;

/// One MSM's scalars and, if any scalar is one, its bitmap.
struct DeviceSplit {
    tail: DevBuf,
    n: u64,
    ones: Option<DevBuf>,
}

/// A partition on the device.
struct OnDevice {
    a: DevBuf,
    b: DevBuf,
    c: DevBuf,
    log_n: u32,
    l: DeviceSplit,
    a_query: DeviceSplit,
    b_query: DeviceSplit,
}

/// An SRS's proving bases on the device, and what identifies the SRS they came from.
struct Resident {
    key: (usize, usize, usize, [u8; 96]),
    h: DevBuf,
    l: DevBuf,
    a: DevBuf,
    b_g1: DevBuf,
    b_g2: DevBuf,
}

pub struct PipelinedGpu {
    inner: GpuBackend,
    copy: Arc<CudaStream>,
    resident: Mutex<Option<Arc<Resident>>>,
    domains: Mutex<HashMap<u32, Arc<HDomain>>>,
    compute_lock: Mutex<()>,
    /// Worker streams not in use: each `compute` takes one (forking a new one if none is free),
    /// so the kernels of two workers' partitions run on two streams.
    workers: Mutex<Vec<GpuDevice>>,
}

/// A worker stream taken from the pool; back into it on drop.
struct Worker<'a> {
    pool: &'a Mutex<Vec<GpuDevice>>,
    dev: Option<GpuDevice>,
}

impl std::ops::Deref for Worker<'_> {
    type Target = GpuDevice;
    fn deref(&self) -> &GpuDevice {
        self.dev.as_ref().expect("a worker holds its device until dropped")
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if let (Some(d), Ok(mut pool)) = (self.dev.take(), self.pool.lock()) {
            pool.push(d);
        }
    }
}

fn srs_key(srs: &Srs) -> (usize, usize, usize, [u8; 96]) {
    let mut first = [0u8; 96];
    if let Some(p) = srs.h().first().or(srs.l().first()) {
        first.copy_from_slice(as_bytes(std::slice::from_ref(p)));
    }
    (srs.h().as_ptr() as usize, srs.h().len(), srs.l().len(), first)
}

impl PipelinedGpu {
    pub fn new(ordinal: usize) -> Result<Self> {
        let inner = GpuBackend::new(ordinal)?;
        let copy = inner.device().ctx.new_stream().map_err(|e| backend_err(format!("copy stream on GPU {ordinal}: {e:?}")))?;
        Ok(PipelinedGpu { inner, copy, resident: Mutex::new(None), domains: Mutex::new(HashMap::new()), compute_lock: Mutex::new(()), workers: Mutex::new(Vec::new()) })
    }

    pub fn inner(&self) -> &GpuBackend {
        &self.inner
    }

    /// Uploads `bytes` on the copy stream (not waiting).
    fn put(&self, bytes: &[u8], what: &str) -> Result<DevBuf> {
        // SAFETY: the whole allocation is written by the copy below before any read.
        let mut s = unsafe { self.copy.alloc::<u8>(bytes.len().max(1)) }
            .map_err(|e| backend_err(format!("allocating {} bytes for {what}: {e:?}", bytes.len())))?;
        for (lo, hi) in copy_pieces(bytes.as_ptr() as usize, bytes.len()) {
            let mut view = s.slice_mut(lo..hi);
            self.copy.memcpy_htod(&bytes[lo..hi], &mut view).map_err(|e| backend_err(format!("upload of {what} (bytes {lo}..{hi}): {e:?}")))?;
        }
        Ok(DevBuf::from_slice(s))
    }

    fn put_split(&self, s: &Split, what: &str) -> Result<DeviceSplit> {
        let ones = if s.ones.count_ones() > 0 { Some(self.put(as_bytes(s.ones.words()), what)?) } else { None };
        Ok(DeviceSplit { tail: self.put(as_bytes(&s.tail), what)?, n: s.tail.len() as u64, ones })
    }

    /// The SRS's bases on the device, uploaded on first use (one parameter set at a time).
    fn resident(&self, srs: &Srs) -> Result<Arc<Resident>> {
        let key = srs_key(srs);
        let mut slot = self.resident.lock().map_err(|_| backend_err("resident SRS cache poisoned"))?;
        if let Some(r) = slot.as_ref().filter(|r| r.key == key) {
            return Ok(r.clone());
        }
        let dev = self.inner.device();
        if slot.take().is_some() {
            // Free the previous set first, and give its memory back (the pool keeps freed memory).
            dev.sync("freeing the previous resident SRS")?;
            if let Err(e) = super::pool::trim(&dev.ctx, 0) {
                // Only a cost: the pool keeps the old set's memory for later allocations.
                eprintln!("cuzk: {e}; the previous resident SRS's memory stays in the pool");
            }
        }
        let r = Arc::new(Resident {
            key,
            h: dev.upload(as_bytes(srs.h()), "resident h bases")?,
            l: dev.upload(as_bytes(srs.l()), "resident l bases")?,
            a: dev.upload(as_bytes(srs.a()), "resident a bases")?,
            b_g1: dev.upload(as_bytes(srs.b_g1()), "resident b_g1 bases")?,
            b_g2: dev.upload(as_bytes(srs.b_g2()), "resident b_g2 bases")?,
        });
        dev.sync("resident SRS upload")?;
        *slot = Some(r.clone());
        Ok(r)
    }

    fn worker(&self) -> Result<Worker<'_>> {
        let free = self.workers.lock().map_err(|_| backend_err("worker stream pool poisoned"))?.pop();
        let dev = match free {
            Some(d) => d,
            None => self.inner.device().fork()?,
        };
        Ok(Worker { pool: &self.workers, dev: Some(dev) })
    }

    fn domain(&self, log_n: u32) -> Result<Arc<HDomain>> {
        let mut d = self.domains.lock().map_err(|_| backend_err("domain cache poisoned"))?;
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

/// The pieces `[lo, hi)` (offsets into a buffer at host address `addr` of `len` bytes) a copy is
/// split into: at the buffer's first and last page boundary and at absolute multiples of
/// `COPY_PIECE`, so that each piece lies within one of the HostPinner's registrations.
pub fn copy_pieces(addr: usize, len: usize) -> Vec<(usize, usize)> {
    let end = addr + len;
    let mut cuts = vec![addr, end];
    cuts.push(addr.div_ceil(PAGE) * PAGE);
    cuts.push(end / PAGE * PAGE);
    let mut m = addr.div_ceil(COPY_PIECE) * COPY_PIECE;
    while m < end {
        cuts.push(m);
        m += COPY_PIECE;
    }
    cuts.retain(|&c| c >= addr && c <= end);
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| (w[0] - addr, w[1] - addr)).collect()
}

/// Waits for a worker's stream when dropped.
struct QuietOnDrop<'a>(&'a super::GpuDevice);

impl Drop for QuietOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.sync("waiting for the partition's kernels");
    }
}

fn check(what: &str, bases: usize, scalars: u64) -> Result<()> {
    if bases as u64 != scalars {
        return Err(backend_err(format!("{what}: the parameters have {bases} bases, the partition {scalars} scalars")));
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

    fn stages_on_device(&self) -> bool {
        true
    }

    fn stage(&self, p: &Prepared) -> Result<Staged> {
        if p.msm_chunk.is_some() {
            // The small-memory tier: too large to stage whole; `compute` runs the heavy steps one
            // by one with the bases streamed in chunks.
            return Ok(Staged::on_host(p.clone()));
        }
        let n = p.a.len();
        if n < 2 || !n.is_power_of_two() || p.b.len() != n || p.c.len() != n {
            return Err(backend_err(format!("stage: a, b, c have {}, {}, {} elements; need one power of two ≥ 2", n, p.b.len(), p.c.len())));
        }
        let on = OnDevice {
            a: self.put(as_bytes(&p.a), "a")?,
            b: self.put(as_bytes(&p.b), "b")?,
            c: self.put(as_bytes(&p.c), "c")?,
            log_n: n.trailing_zeros(),
            l: self.put_split(&p.l, "l scalars")?,
            a_query: self.put_split(&p.a_query, "a scalars")?,
            b_query: self.put_split(&p.b_query, "b scalars")?,
        };
        // The copies are done when this returns: compute (another stream) may read them, and the
        // caller may unpin and free the host buffers.
        self.copy.synchronize().map_err(|e| backend_err(format!("copy stream: {e:?}")))?;
        Ok(Staged { index: p.index, public_inputs: p.public_inputs.clone(), payload: Box::new(on) })
    }

    fn compute(&self, srs: &Srs, staged: Staged, t: &mut Timings) -> Result<Computed> {
        self.compute_then(srs, staged, t, &mut || {})
    }

    fn compute_then(&self, srs: &Srs, staged: Staged, t: &mut Timings, launched: &mut dyn FnMut()) -> Result<Computed> {
        let Staged { index, public_inputs, payload } = staged;
        let on = match payload.downcast::<OnDevice>() {
            Ok(on) => *on,
            // Staged on the host (e.g. by a caller that skipped `stage`): the heavy steps one by one.
            Err(other) => {
                let p = other.downcast::<Prepared>().map_err(|_| backend_err("partition was staged by another backend"))?;
                let sums = crate::backend::run_steps(self, srs, *p, t);
                launched();
                return Ok(Computed { index, public_inputs, payload: Box::new(sums?) });
            }
        };
        let worker = self.worker()?;
        let dev: &GpuDevice = &worker;
        // The partition's buffers belong to the copy stream, whose allocator may hand their memory
        // to the next upload as soon as they are freed: on every way out of here (errors too), wait
        // for this worker's kernels before they drop. Declared after `on`, so it drops first.
        let _quiet = QuietOnDrop(dev);

        // Queue every kernel of the partition on the worker's stream, under the per-GPU lock; the
        // lock is released before waiting for them.
        let (r, d, queued, marks) = {
            let _g = self.compute_lock.lock().map_err(|_| backend_err("compute lock poisoned"))?;
            let r = self.resident(srs)?;
            let n = 1u64 << on.log_n;
            if srs.h().len() as u64 != n - 1 {
                return Err(backend_err(format!("the partition's domain is {n}; the parameters' h has {} points", srs.h().len())));
            }
            check("l", srs.l().len(), on.l.n)?;
            check("a", srs.a().len(), on.a_query.n)?;
            check("b", srs.b_g1().len(), on.b_query.n)?;
            let d = self.domain(on.log_n)?;

            let mut marks = vec![("", dev.mark()?)];
            compute_h_device(dev, &d, on.a.ptr(), on.b.ptr(), on.c.ptr())?;
            marks.push(("ntt_h", dev.mark()?));
            let h = QueuedMsm::queue(dev, Curve::G1, &r.h, &on.b, n - 1)?;
            marks.push(("msm_h", dev.mark()?));
            let mut g1 = |bases: &DevBuf, s: &DeviceSplit, curve: Curve, tail: &'static str, ones: &'static str| -> Result<Queued> {
                let msm = QueuedMsm::queue(dev, curve, bases, &s.tail, s.n)?;
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
            (r, d, (h, l, a, b_g1, b_g2), marks)
        };
        dev.sync("waiting for the partition's kernels")?;
        let end = Instant::now();
        // The GPU is done with this partition: the next one may launch while the sums are read
        // back and combined. (Passing the turn on right after queueing let the next partition's
        // kernels run beside these: 4% less throughput with two workers at 2^23 on the H200.)
        launched();
        // The events' times relative to the last one, placed on the host clock at `end`.
        let last = &marks[marks.len() - 1].1;
        let at = |ev: &cudarc::driver::CudaEvent| -> Result<Instant> {
            let ms = ev.elapsed_ms(last).map_err(|e| backend_err(format!("event timing: {e:?}")))?;
            Ok(end.checked_sub(std::time::Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3)).unwrap_or(end))
        };
        for w in marks.windows(2) {
            t.span(w[1].0, at(&w[0].1)?, at(&w[1].1)?);
        }
        let (h, l, a, b_g1, b_g2) = queued;
        let read_back = Instant::now();
        let sums = Sums { h: QueuedMsm::g1(h, dev)?, l: l.g1(dev)?, a: a.g1(dev)?, b_g1: b_g1.g1(dev)?, b_g2: b_g2.g2(dev)? };
        t.span("dtoh", read_back, Instant::now());
        drop((r, d));
        Ok(Computed { index, public_inputs, payload: Box::new(sums) })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_pieces_cover_the_buffer_and_never_cross_a_page_or_piece_boundary_inside() {
        for (addr, len) in [(0x1000_0010usize, 300_000_000usize), (4096, 4096), (100, 10), (COPY_PIECE - 5, 10), (0, 0), (7, COPY_PIECE * 3)] {
            let p = copy_pieces(addr, len);
            let mut at = 0;
            for &(lo, hi) in &p {
                assert_eq!(lo, at);
                assert!(hi > lo);
                at = hi;
                let (a, b) = (addr + lo, addr + hi);
                // Within one COPY_PIECE block, and either within one page or page-aligned inside.
                assert_eq!(a / COPY_PIECE, (b - 1) / COPY_PIECE, "piece {a:#x}..{b:#x} crosses a piece boundary");
                let first_page = a / 4096 == addr / 4096;
                let last_page = (b - 1) / 4096 == (addr + len - 1) / 4096;
                if first_page && a % 4096 != 0 {
                    assert_eq!(a / 4096, (b - 1) / 4096, "the head piece leaves the buffer's first page");
                }
                if last_page && b % 4096 != 0 && !(first_page && a / 4096 == (b - 1) / 4096) {
                    assert_eq!(a / 4096, (b - 1) / 4096, "the tail piece starts before the buffer's last page");
                }
            }
            assert_eq!(at, len);
        }
    }
}
