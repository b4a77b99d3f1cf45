//! The streamed tier on a GPU (`PipelinedGpu::compute_streamed`): a partition proved on a card
//! whose budget holds neither the SRS nor a whole partition. The plan and its device bytes are
//! `stream_plan.rs`'s; this file runs it.
//!
//! - Two streams: the GPU's kernel stream and a copy stream of the tier's own. Host data
//!   (`a, b, c`, the queries' scalars and bitmaps, the bases) goes through a ring of page-locked
//!   buffers of the backend's own ([`Ring`]), filled by host threads while earlier pieces are in
//!   flight; the kernels wait on events for the copies they read, and the copy stream waits on
//!   events for the kernels that still read a chunk buffer before it overwrites it.
//! - The bases of each MSM are streamed in chunks through two device buffers, each chunk's MSM
//!   and batch addition queued as soon as its copy is: the copy of chunk k+1 overlaps chunk k's
//!   kernels. Each chunk's window sums stay on the device until the partition's last kernel;
//!   then they are read back and added.
//! - While the H-MSM runs, the host builds the queries' scalar splits from the witness. Where
//!   the plan has overlap slots and the bases stream straight, the queries' MSMs then run in
//!   chunks between the H-MSM's (`streamed_overlap.rs`): their bases cross PCIe while its
//!   kernels run.
//! - Where the bases are resident (`StreamTier::resident_bases`), the MSMs read them there and
//!   only the partition's own data crosses PCIe; where the recording is
//!   (`StreamTier::resident_recording`), of the partition's own data only the witness does.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use cudarc::driver::CudaEvent;
use group::Group;

use super::batch_add::{batch_add_at, read_sum};
use super::buf::DevBuf;
use super::h::compute_h_device;
use super::msm::{MsmPlan, QueuedMsm};
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::ring::Ring;
use super::spmv::{DeviceRecording, DeviceSplit};
use super::stream_plan::StreamTier;
use super::{as_bytes, backend_err, GpuDevice, PipelinedGpu, Result};
use crate::backend::Backend;
use crate::gather::Gather;
use crate::prover::{splits, unsatisfied, Prepared, Split, Sums};
use crate::timings::Timings;
use cuzk_srs::Srs;

/// What the streamed tier moved and waited for, over every partition since the last
/// [`take_transfer_stats`]: read by `cuzk bench porep` per VRAM budget.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TransferStats {
    pub partitions: u64,
    /// Bytes copied host → device.
    pub h2d_bytes: u64,
    /// Milliseconds from a partition's first kernel to its last, summed.
    pub gpu_ms: f64,
    /// Of which the kernel stream ran kernels; the rest it waited for copies (exposed transfer).
    pub kernel_ms: f64,
}

static STATS: std::sync::Mutex<TransferStats> = std::sync::Mutex::new(TransferStats {
    partitions: 0,
    h2d_bytes: 0,
    gpu_ms: 0.0,
    kernel_ms: 0.0,
});

/// The streamed tier's totals since the last call, and starts new ones.
pub fn take_transfer_stats() -> TransferStats {
    STATS
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}

/// Kernel-busy intervals of one partition: pairs of events around groups of kernels queued right
/// after the kernel stream's waits for copies.
#[derive(Default)]
pub(super) struct Busy {
    pub(super) spans: Vec<(CudaEvent, CudaEvent)>,
}

impl Busy {
    /// Adds up the intervals (the events are complete): (first start to last end, busy) in ms.
    fn totals(&self) -> Result<(f64, f64)> {
        let ms = |a: &CudaEvent, b: &CudaEvent| -> Result<f64> {
            a.elapsed_ms(b)
                .map(|m| f64::from(m.max(0.0)))
                .map_err(|e| backend_err(format!("event timing: {e:?}")))
        };
        let (Some(first), Some(last)) = (self.spans.first(), self.spans.last()) else {
            return Ok((0.0, 0.0));
        };
        let mut busy = 0.0;
        for (a, b) in &self.spans {
            busy += ms(a, b)?;
        }
        Ok((ms(&first.0, &last.1)?, busy))
    }
}

/// The queries' splits built on the host: `(l, a, b)`.
pub(super) type HostSplits = (Split, Split, Split);
/// Their gather plans, where they gather.
pub(super) type Plans = [Option<Gather>; 3];

/// One query's results still on the device: each chunk's MSM and batch addition.
#[derive(Default)]
pub(super) struct Pieces {
    pub(super) msms: Vec<QueuedMsm>,
    pub(super) ones: Vec<DevBuf>,
}

impl Pieces {
    fn g1(self, dev: &GpuDevice) -> Result<G1Projective> {
        let mut acc = G1Projective::identity();
        for q in self.msms {
            acc += QueuedMsm::g1(Some(q), dev)?;
        }
        for s in &self.ones {
            acc += g1_from_xyzz(&read_sum(dev, s, Curve::G1)?);
        }
        Ok(acc)
    }
    fn g2(self, dev: &GpuDevice) -> Result<G2Projective> {
        let mut acc = G2Projective::identity();
        for q in self.msms {
            acc += QueuedMsm::g2(Some(q), dev)?;
        }
        for s in &self.ones {
            acc += g2_from_xyzz(&read_sum(dev, s, Curve::G2)?);
        }
        Ok(acc)
    }
}

/// An MSM's scalars (and one-bitmap) on the device, with the host tail they came from (each
/// chunk's plan is sized by its own nonzero count).
struct Scalars<'h> {
    dev: DevBuf,
    ones: Option<DevBuf>,
    host: Option<&'h [Scalar]>,
    n: u64,
    /// The nonzero count of all `n`, where known without the host tail (built on the device).
    live: Option<u64>,
    /// The host split's gather plan, whose bitmap counts a chunk's nonzero scalars.
    plan: Option<&'h Gather>,
}

impl Scalars<'_> {
    fn on_device(s: DeviceSplit) -> Scalars<'static> {
        Scalars {
            dev: s.tail,
            ones: s.ones,
            host: None,
            n: s.n,
            live: Some(s.live),
            plan: None,
        }
    }
}

impl PipelinedGpu {
    /// Runs a partition in the streamed tier (`p.stream`), from its host data to its sums.
    pub(super) fn compute_streamed(
        &self,
        srs: &Srs,
        mut p: Prepared,
        tier: StreamTier,
        t: &mut Timings,
    ) -> Result<Sums> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let mut ring = self
            .ring
            .lock()
            .map_err(|_| backend_err("copy ring poisoned"))?;
        if ring.is_none() {
            *ring = Some(Ring::new(cp)?);
        }
        let ring = ring.as_mut().ok_or_else(|| backend_err("no copy ring"))?;
        ring.moved = 0;
        let mut busy = Busy::default();
        let resident = if tier.resident_bases {
            Some(self.resident(srs)?)
        } else {
            None
        };
        let n = srs.domain_size();
        let log_n = n.trailing_zeros();
        let d = self.domain(log_n)?;

        // 1. a, b, c: on the device from the uploaded witness, the matrices streamed in row
        //    pieces (`device_products`), or from the recording on the host, one at a time, each
        //    uploaded and freed.
        let start = Instant::now();
        let rec = p.recorded.take();
        if let Some(r) = rec.as_ref() {
            r.rec.check_witness(&r.inputs, &r.aux, p.index)?;
            let c = r.rec.counts();
            if c.rows() > n {
                return Err(backend_err(format!(
                    "circuit {}: {} recorded rows for a domain of {n}",
                    p.index,
                    c.rows()
                )));
            }
        }
        // The witness on the device, kept until the queries' scalars are built from it (the
        // recording resident), with the resident matrices.
        let mut on_device: Option<(DevBuf, Arc<DeviceRecording>)> = None;
        let db = match rec.as_ref() {
            Some(r) if tier.device_products && !tier.resident_recording => {
                // The products one at a time around the H step (`streamed_products.rs`).
                let pieces = tier.chunk.clamp(1024, super::stream_plan::PIECE_ENTRIES);
                let pinned = tier.pinned_recording;
                let h =
                    self.h_from_streamed_products(ring, &mut busy, r, &d, pieces, pinned, p.index)?;
                t.step("products", start);
                h
            }
            _ => {
                let abc = match rec.as_ref() {
                    Some(r) if tier.resident_recording => {
                        let (w, dr, products) = self.products_resident(ring, &mut busy, r, n)?;
                        on_device = Some((w, dr));
                        products
                    }
                    _ => self.products_from_host(ring, rec.as_ref(), &mut p, n)?,
                };
                t.step("products", start);
                let start = Instant::now();
                // Every row's a·b = c, checked on the device (the full path's `prepare` does it
                // on the host).
                if let Some(r) = rec.as_ref().filter(|r| r.check_satisfied) {
                    ring.drain()?;
                    // Checked on the stream that computed the products.
                    let on = if on_device.is_some() { dev } else { cp };
                    if let Some(row) = first_unsatisfied(on, &abc, r.rec.counts().rows() as u64)? {
                        let v = read_row(cp, &abc, row)?;
                        return Err(unsatisfied(p.index, row, &v[0], &v[1], &v[2]));
                    }
                }
                dev.stream.wait(&cp.mark()?).map_err(|e| {
                    backend_err(format!("kernel stream waiting for a, b, c: {e:?}"))
                })?;
                let k0 = dev.mark()?;
                compute_h_device(dev, &d, abc[0].ptr(), abc[1].ptr(), abc[2].ptr())?;
                busy.spans.push((k0, dev.mark()?));
                let mut abc = abc.into_iter();
                let (da, db, dc) = match (abc.next(), abc.next(), abc.next()) {
                    (Some(a), Some(b), Some(c)) => (a, b, c),
                    _ => return Err(backend_err("streamed a, b, c: three buffers expected")),
                };
                // a and c are read by the H step only: freed once the kernels are past it.
                self.free_after_kernels(vec![da, dc])?;
                t.step("ntt_h", start);
                db
            }
        };

        // 2. The H-MSM, bases streamed, while the host builds the queries' scalars; where the
        //    plan has overlap slots and the bases stream straight, with the queries' MSMs beside
        //    it (`streamed_overlap.rs`).
        let start = Instant::now();
        let h_scalars = Scalars {
            dev: db,
            ones: None,
            host: None,
            n: (n - 1) as u64,
            live: None,
            plan: None,
        };
        let h_bases = resident.as_ref().map(|r| &r.h);
        let mut overlapped = None;
        let (h, host_splits, built, plans) = match on_device.take() {
            Some((w, dr)) => {
                // The recording resident: the H-MSM, then the queries' scalars built from the
                // witness on the kernel stream behind it (or uploaded, where `prepare` built
                // them), and the witness freed.
                let h = self.msm_streamed(
                    ring,
                    &mut busy,
                    Curve::G1,
                    as_bytes(srs.h()),
                    h_bases,
                    &h_scalars,
                    (tier.chunk, tier.pinned_bases),
                )?;
                let pending = rec.as_ref().is_some_and(|r| r.splits_pending);
                let (host, built) = if pending {
                    let k0 = dev.mark()?;
                    let [l, a, b] = dr.splits(dev, &w)?;
                    busy.spans.push((k0, dev.mark()?));
                    (None, [l, a, b].map(|s| Some(Scalars::on_device(s))))
                } else {
                    let host = (
                        std::mem::take(&mut p.l),
                        std::mem::take(&mut p.a_query),
                        std::mem::take(&mut p.b_query),
                    );
                    (Some(host), [None, None, None])
                };
                self.free_after_kernels(vec![w])?;
                (h, host, built, [None, None, None])
            }
            // The queries' MSMs beside the H-MSM (`streamed_overlap.rs`), where their bases
            // stream straight.
            None if tier.overlap_slots > 0
                && tier.pinned_bases
                && h_bases.is_none()
                && super::streamed_overlap::enabled() =>
            {
                let taken = take_host_splits(&mut p);
                let o = self.h_msm_with_queries(
                    ring,
                    &mut busy,
                    srs,
                    (&h_scalars.dev, h_scalars.n),
                    tier,
                    move || {
                        use super::streamed_overlap::{packs_from_witness, Built};
                        match rec.as_ref().and_then(packs_from_witness) {
                            Some(packs) => Built::Packs(packs),
                            None => {
                                let (host, plans) = host_splits_and_plans(tier, rec, taken);
                                Built::Splits(Box::new((host, plans)))
                            }
                        }
                    },
                )?;
                // Named by what followed: the queries beside the H-MSM, or after it.
                let stage = if o.queries.is_ok() {
                    "query_packs"
                } else {
                    "host_splits"
                };
                t.span(stage, start, o.splits_ready);
                log::debug!(
                    "{}: partition {}: {} of the H-MSM's chunks queued before the queries' packs; the queries {}",
                    self.name(),
                    p.index,
                    o.h_ahead,
                    if o.queries.is_ok() {
                        "beside it"
                    } else {
                        "after it (a tail does not pack)"
                    }
                );
                match o.queries {
                    Ok(q) => {
                        overlapped = Some(q);
                        (o.h, None, [None, None, None], [None, None, None])
                    }
                    Err((host, plans)) => (o.h, Some(host), [None, None, None], plans),
                }
            }
            None => {
                let (h, host) = self.h_msm_and_host_splits(
                    ring, &mut busy, srs, &h_scalars, h_bases, tier, rec, &mut p,
                );
                let (host, plans) = host?;
                (h?, Some(host), [None, None, None], plans)
            }
        };
        self.free_after_kernels(vec![h_scalars.dev])?;
        t.step("msm_h", start);

        // 3. The queries, where they did not run beside the H-MSM: one after another, scalars
        //    uploaded just before (or built on the device), freed after.
        let start = Instant::now();
        let (lp, ap, bp, b2p) = match overlapped {
            Some([lp, ap, bp, b2p]) => (lp, ap, bp, b2p),
            None => self.queries_in_turn(
                ring,
                &mut busy,
                srs,
                tier,
                resident.as_ref(),
                built,
                host_splits.as_ref(),
                plans,
            )?,
        };
        ring.drain()?;
        dev.sync("the streamed partition's kernels")?;
        t.step("tail_msm", start);
        let (gpu_ms, kernel_ms) = busy.totals()?;
        if let Ok(mut st) = STATS.lock() {
            st.partitions += 1;
            st.h2d_bytes += ring.moved;
            st.gpu_ms += gpu_ms;
            st.kernel_ms += kernel_ms;
        }
        log::debug!(
            "{}: streamed partition {}: {} MiB host to device, GPU {gpu_ms:.1} ms of which kernels {kernel_ms:.1} ms",
            self.name(),
            p.index,
            ring.moved >> 20
        );
        let read_back = Instant::now();
        let sums = Sums {
            h: h.g1(dev)?,
            l: lp.g1(dev)?,
            a: ap.g1(dev)?,
            b_g1: bp.g1(dev)?,
            b_g2: b2p.g2(dev)?,
        };
        t.span("dtoh", read_back, Instant::now());
        Ok(sums)
    }

    /// The queries' MSMs one after another: `l`, `a`, `b_g1`, `b_g2` (`b`'s scalars serve both),
    /// each one's scalars built on the device (`built`) or uploaded from the host splits just
    /// before it and freed after.
    #[allow(clippy::too_many_arguments)]
    fn queries_in_turn(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        srs: &Srs,
        tier: StreamTier,
        rb: Option<&Arc<super::staged::Resident>>,
        built: [Option<Scalars>; 3],
        host: Option<&HostSplits>,
        plans: Plans,
    ) -> Result<(Pieces, Pieces, Pieces, Pieces)> {
        let [dl, da, db] = built;
        let [pl, pa, pb] = plans;
        let chunks = (tier.chunk, tier.pinned_bases);
        let mut b_packed = None;
        let lp = self.query_msm(
            ring,
            busy,
            (Curve::G1, as_bytes(srs.l()), rb.map(|r| &r.l)),
            dl,
            (host.map(|h| &h.0), pl.as_ref()),
            chunks,
            "l",
        )?;
        let ap = self.query_msm(
            ring,
            busy,
            (Curve::G1, as_bytes(srs.a()), rb.map(|r| &r.a)),
            da,
            (host.map(|h| &h.1), pa.as_ref()),
            chunks,
            "a",
        )?;
        // b's scalars serve b_g1 and b_g2: built or uploaded once, freed after b_g2.
        let mut bqs = db;
        let bp = self.query_msm_kept(
            ring,
            busy,
            (Curve::G1, as_bytes(srs.b_g1()), rb.map(|r| &r.b_g1)),
            &mut bqs,
            (host.map(|h| &h.2), pb.as_ref()),
            chunks,
            &mut b_packed,
            "b",
        )?;
        let b2p = self.query_msm_kept(
            ring,
            busy,
            (Curve::G2, as_bytes(srs.b_g2()), rb.map(|r| &r.b_g2)),
            &mut bqs,
            (host.map(|h| &h.2), pb.as_ref()),
            (tier.chunk_g2, tier.pinned_bases),
            &mut b_packed,
            "b",
        )?;
        if let Some(s) = bqs {
            self.free_scalars(s)?;
        }
        if let Some(p) = b_packed {
            self.free_after_kernels(vec![p])?;
        }
        Ok((lp, ap, bp, b2p))
    }

    /// `a, b, c` from the host, one at a time, each uploaded through the ring: evaluated from the
    /// recording there, or taken from `p` (full synthesis).
    fn products_from_host(
        &self,
        ring: &mut Ring,
        rec: Option<&crate::prover::Recorded>,
        p: &mut Prepared,
        n: usize,
    ) -> Result<Vec<DevBuf>> {
        let cp = &self.stream_copy;
        let mut abc = Vec::with_capacity(3);
        for m in 0..3 {
            let host = match rec {
                Some(r) => {
                    let mut v = r.rec.product(m, &r.inputs, &r.aux);
                    v.resize(n, Scalar::from(0u64));
                    v
                }
                None => std::mem::take(match m {
                    0 => &mut p.a,
                    1 => &mut p.b,
                    _ => &mut p.c,
                }),
            };
            if host.len() != n {
                return Err(backend_err(format!(
                    "circuit {}: {} evaluations for a domain of {n}",
                    p.index,
                    host.len()
                )));
            }
            let mut buf = cp.alloc(n * 32, "streamed a, b, c")?;
            ring.upload(cp, &mut buf, 0, as_bytes(&host), "a, b, c")?;
            abc.push(buf);
        }
        Ok(abc)
    }

    /// The H-MSM over `h_scalars` while the host builds the queries' scalar splits from the
    /// witness (or takes those `prepare` built) and, where the bases stream, their gather plans
    /// (`streamed_gather::plan`): both off the tails' path.
    #[allow(clippy::too_many_arguments)]
    fn h_msm_and_host_splits(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        srs: &Srs,
        h_scalars: &Scalars,
        h_bases: Option<&DevBuf>,
        tier: StreamTier,
        rec: Option<crate::prover::Recorded>,
        p: &mut Prepared,
    ) -> (Result<Pieces>, Result<(HostSplits, Plans)>) {
        rayon::join(
            || {
                self.msm_streamed(
                    ring,
                    busy,
                    Curve::G1,
                    as_bytes(srs.h()),
                    h_bases,
                    h_scalars,
                    (tier.chunk, tier.pinned_bases),
                )
            },
            || Ok(host_splits_and_plans(tier, rec, take_host_splits(p))),
        )
    }

    /// `A·w`, `B·w`, `C·w` on the kernel stream from the recording's matrices resident on this
    /// GPU (uploaded on the shape's first use and kept, as the whole tier's are): only the
    /// witness is uploaded, through the ring; it is returned, for the queries' scalars.
    fn products_resident(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        r: &crate::prover::Recorded,
        n: usize,
    ) -> Result<(DevBuf, Arc<DeviceRecording>, Vec<DevBuf>)> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let dr = self.device_recording(&r.rec)?;
        let w = self.upload_witness(ring, r)?;
        dev.stream
            .wait(&cp.mark()?)
            .map_err(|e| backend_err(format!("kernels waiting for the witness: {e:?}")))?;
        let k0 = dev.mark()?;
        let abc = dr.products(dev, &w, n)?;
        busy.spans.push((k0, dev.mark()?));
        Ok((w, dr, abc.into()))
    }

    /// Frees device buffers the copy stream allocated once the kernel stream is past everything
    /// queued so far (the copy stream waits for it, then frees in its order).
    pub(super) fn free_after_kernels(&self, bufs: Vec<DevBuf>) -> Result<()> {
        let ev = self.kernels.mark()?;
        self.stream_copy
            .stream
            .wait(&ev)
            .map_err(|e| backend_err(format!("copy stream waiting for the kernels: {e:?}")))?;
        drop(bufs);
        Ok(())
    }

    fn free_scalars(&self, s: Scalars) -> Result<()> {
        let mut bufs = vec![s.dev];
        bufs.extend(s.ones);
        self.free_after_kernels(bufs)
    }

    /// A query's tail and one-bitmap on the device (uploaded through the ring), with the host
    /// tail beside them.
    fn upload_query<'h>(
        &self,
        ring: &mut Ring,
        split: &'h Split,
        plan: Option<&'h Gather>,
        what: &str,
    ) -> Result<Scalars<'h>> {
        let cp = &self.stream_copy;
        let s = match plan.filter(|g| g.len() == split.len()) {
            // Packed by its plan's bitmap, unpacked on the device (`witness_upload.rs`).
            Some(g) => self.upload_packed_tail(ring, split, g, what)?,
            None => self.upload_new(ring, as_bytes(&split.tail), what)?,
        };
        let ones = if split.ones.count_ones() > 0 {
            let w = as_bytes(split.ones.words());
            let mut b = cp.alloc(w.len().max(8), what)?;
            ring.upload(cp, &mut b, 0, w, what)?;
            Some(b)
        } else {
            None
        };
        Ok(Scalars {
            dev: s,
            ones,
            host: Some(&split.tail),
            n: split.tail.len() as u64,
            live: None,
            plan,
        })
    }

    /// One query's MSM, its scalars freed after ([`Self::query_msm_kept`]).
    #[allow(clippy::too_many_arguments)]
    fn query_msm(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        bases: (Curve, &[u8], Option<&DevBuf>),
        built: Option<Scalars>,
        host: (Option<&Split>, Option<&Gather>),
        chunks: (u64, bool),
        what: &str,
    ) -> Result<Pieces> {
        let mut kept = built;
        let mut packed = None;
        let out = self.query_msm_kept(
            ring,
            busy,
            bases,
            &mut kept,
            host,
            chunks,
            &mut packed,
            what,
        )?;
        if let Some(s) = kept {
            self.free_scalars(s)?;
        }
        if let Some(p) = packed.take() {
            self.free_after_kernels(vec![p])?;
        }
        Ok(out)
    }

    /// One query's MSM against its bases (`(curve, host bases, resident copy)`): over the
    /// gathered bases (`streamed_gather.rs`) where they stream from the host and the host's
    /// split has a gather `plan` (the packed tail scalars left in `packed`); else over every
    /// base, with the scalars built on the device or uploaded (left in `kept`).
    #[allow(clippy::too_many_arguments)]
    fn query_msm_kept<'h>(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        (curve, host_bases, resident): (Curve, &[u8], Option<&DevBuf>),
        kept: &mut Option<Scalars<'h>>,
        (host, plan): (Option<&'h Split>, Option<&'h Gather>),
        (chunk, pinned): (u64, bool),
        packed: &mut Option<DevBuf>,
        what: &str,
    ) -> Result<Pieces> {
        let bases = host_bases.len() / curve.affine_bytes();
        // Gathered where the bases would cross the copy ring anyway; registered bases are copied
        // straight at the link's rate, several times the ring's packing (55 against 16 GB/s on
        // the H100, 2026-12-07), so there every base streams and only the scalars are packed.
        let gathers = plan.filter(|g| !pinned && super::streamed_gather::gathers(g));
        if let (None, None, Some(split), Some(g)) = (resident, kept.as_ref(), host, gathers) {
            check(what, bases, split.len() as u64)?;
            return self.msm_gathered(ring, busy, curve, host_bases, split, g, packed, chunk);
        }
        let s = match kept.take() {
            Some(s) => s,
            None => self.query(ring, host, plan, &format!("{what} scalars"))?,
        };
        check(what, bases, s.n)?;
        let out = self.msm_streamed(ring, busy, curve, host_bases, resident, &s, (chunk, pinned));
        *kept = Some(s);
        out
    }

    /// A query's host split uploaded (its scalars were not built on the device).
    fn query<'h>(
        &self,
        ring: &mut Ring,
        host: Option<&'h Split>,
        plan: Option<&'h Gather>,
        what: &str,
    ) -> Result<Scalars<'h>> {
        match host {
            Some(split) => self.upload_query(ring, split, plan, what),
            None => Err(backend_err(format!(
                "{what}: neither built on the device nor on the host"
            ))),
        }
    }

    /// The MSM of `s` (and its batch addition where `s.ones`) against `host_bases` (or the
    /// `resident` copy), in chunks of `chunk` points: each chunk's bases copied into one of two
    /// device buffers while the kernels work on the other.
    #[allow(clippy::too_many_arguments)]
    fn msm_streamed(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        curve: Curve,
        host_bases: &[u8],
        resident: Option<&DevBuf>,
        s: &Scalars,
        (chunk, pinned): (u64, bool),
    ) -> Result<Pieces> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let affine = curve.affine_bytes();
        let n = s.n;
        if host_bases.len() as u64 != n * affine as u64 {
            return Err(backend_err(format!(
                "streamed MSM: {} bytes of bases for {n} scalars",
                host_bases.len()
            )));
        }
        let mut out = Pieces::default();
        if n == 0 {
            return Ok(out);
        }
        // Each chunk's nonzero count sizes its plan (the witness tails are ~1 % nonzero): counted
        // on the host tail, else bounded by the whole's (scalars built on the device).
        let live = |lo: u64, hi: u64| -> u64 {
            if let Some(g) = s.plan {
                return g.tail_between(lo as usize, hi as usize) as u64;
            }
            match (s.host, s.live) {
                (None, Some(all)) => all.min(hi - lo),
                (Some(h), _) => {
                    use rayon::prelude::*;
                    h[lo as usize..hi as usize]
                        .par_iter()
                        .with_min_len(1 << 14)
                        .filter(|x| !bool::from(ff::Field::is_zero(*x)))
                        .count() as u64
                }
                _ => hi - lo,
            }
        };
        let queue =
            |bases: u64, lo: u64, hi: u64, out: &mut Pieces, busy: &mut Busy| -> Result<()> {
                let len = hi - lo;
                let plan = MsmPlan::on_sparse(dev, len, live(lo, hi), curve);
                let k0 = dev.mark()?;
                if let Some(q) = QueuedMsm::at(dev, bases, s.dev.at(lo as usize * 32), &plan)? {
                    out.msms.push(q);
                }
                if let Some(bits) = &s.ones {
                    out.ones.push(batch_add_at(
                        dev,
                        curve,
                        bases,
                        bits.at((lo / 64) as usize * 8),
                        len,
                    )?);
                }
                busy.spans.push((k0, dev.mark()?));
                Ok(())
            };
        if let Some(r) = resident {
            // One piece over the resident bases, once the scalars' (and one-bitmap's) upload on
            // the copy stream is done: nothing else orders the kernels after it here (a chunk's
            // bases copy does below), and a plan sized by the nonzero count overruns on stale
            // scalars (an illegal address on the H100, 2026-12-07).
            dev.stream.wait(&cp.mark()?).map_err(|e| {
                backend_err(format!("kernels waiting for the MSM's scalars: {e:?}"))
            })?;
            queue(r.ptr(), 0, n, &mut out, busy)?;
            return Ok(out);
        }
        let chunk = chunk.clamp(64, n.next_multiple_of(64)) / 64 * 64;
        let mut bufs = [
            cp.alloc(chunk as usize * affine, "streamed bases")?,
            cp.alloc(chunk as usize * affine, "streamed bases")?,
        ];
        let mut read: [Option<CudaEvent>; 2] = [None, None];
        let mut lo = 0u64;
        let mut k = 0usize;
        while lo < n {
            let hi = (lo + chunk).min(n);
            let j = k % 2;
            if let Some(ev) = read[j].take() {
                cp.stream
                    .wait(&ev)
                    .map_err(|e| backend_err(format!("copy stream waiting for an MSM: {e:?}")))?;
            }
            let src = &host_bases[lo as usize * affine..hi as usize * affine];
            ring.upload_from(cp, &mut bufs[j], 0, src, pinned, "streamed bases")?;
            dev.stream
                .wait(&cp.mark()?)
                .map_err(|e| backend_err(format!("kernels waiting for streamed bases: {e:?}")))?;
            queue(bufs[j].ptr(), lo, hi, &mut out, busy)?;
            read[j] = Some(dev.mark()?);
            lo = hi;
            k += 1;
        }
        let [b0, b1] = bufs;
        self.free_after_kernels(vec![b0, b1])?;
        Ok(out)
    }
}

/// The queries' splits `prepare` built, taken from `p` (empty where they are pending).
fn take_host_splits(p: &mut Prepared) -> HostSplits {
    (
        std::mem::take(&mut p.l),
        std::mem::take(&mut p.a_query),
        std::mem::take(&mut p.b_query),
    )
}

/// The queries' splits, built from the witness where they are pending (its aux becomes `l`'s
/// tail: no copy of it is made), else `taken` from `prepare`; and their gather plans where the
/// bases stream (`streamed_gather::plan`).
fn host_splits_and_plans(
    tier: StreamTier,
    rec: Option<crate::prover::Recorded>,
    taken: HostSplits,
) -> (HostSplits, Plans) {
    let host = match rec {
        Some(r) if r.splits_pending => {
            let [a_aux, b_in, b_aux] = r.rec.densities();
            splits(&r.inputs, r.aux, [&a_aux, &b_in, &b_aux])
        }
        _ => taken,
    };
    let plans = if tier.resident_bases {
        [None, None, None]
    } else {
        let plan = super::streamed_gather::plan;
        [plan(&host.0), plan(&host.1), plan(&host.2)]
    };
    (host, plans)
}

fn check(what: &str, bases: usize, scalars: u64) -> Result<()> {
    if bases as u64 != scalars {
        return Err(backend_err(format!(
            "{what}: the parameters have {bases} bases, the partition {scalars} scalars"
        )));
    }
    Ok(())
}

/// The first row `< rows` where `a·b ≠ c` (the products on the device); waits for the answer.
fn first_unsatisfied(cp: &GpuDevice, abc: &[DevBuf], rows: u64) -> Result<Option<usize>> {
    if rows == 0 {
        return Ok(None);
    }
    let first = cp.upload(as_bytes(&[rows]), "row check result")?;
    crate::gpu_launch!(
        cp,
        "spmv_unsatisfied",
        super::device::grid(rows, 256),
        &first.ptr(),
        &abc[0].ptr(),
        &abc[1].ptr(),
        &abc[2].ptr(),
        &rows
    )?;
    let mut out = [0u64];
    cp.download(&first, 0, super::as_bytes_mut(&mut out), "row check result")?;
    Ok((out[0] < rows).then_some(out[0] as usize))
}

fn read_row(cp: &GpuDevice, abc: &[DevBuf], row: usize) -> Result<[Scalar; 3]> {
    let mut v = [Scalar::from(0u64); 3];
    for (m, out) in v.iter_mut().enumerate() {
        cp.download(
            &abc[m],
            32 * row,
            super::as_bytes_mut(std::slice::from_mut(out)),
            "unsatisfied row",
        )?;
    }
    Ok(v)
}
