//! The streamed tier's gathered query MSMs (`gather.rs`): where a query's bases stream from the
//! host, only those whose scalar is not zero cross PCIe. Per chunk of gathered points, the host
//! packs the nonzero-tail points' bases, then the ones', into the copy ring; the tail's nonzero
//! scalars go to one packed device buffer beside them (uploaded by the query's first MSM and read
//! by the next: `b`'s serve `b_g1` and `b_g2`). Each chunk's MSM reads the first part of its
//! buffer, its batch addition the second with a bitmap of set bits; the copy of chunk k+1
//! overlaps chunk k's kernels, as in `msm_streamed`.
//!
//! Only where the bases cross the copy ring (not registered): registered bases are copied
//! straight at the link's rate, faster than the ring packs (`streamed.rs`, `query_msm_kept`).
//! `CUZK_STREAM_GATHER=0` turns it off (every query streams all its bases, as before).

use std::sync::OnceLock;

use cudarc::driver::CudaEvent;

use super::batch_add::batch_add_at;
use super::buf::DevBuf;
use super::msm::{MsmPlan, QueuedMsm};
use super::points::Curve;
use super::ring::Ring;
use super::streamed::{Busy, Pieces};
use super::{as_bytes, backend_err, PipelinedGpu, Result};
use crate::density::BitVec;
use crate::gather::{gather_bytes, side_threads, Gather};
use crate::prover::Split;

/// Whether the streamed tier gathers its queries' bases (`CUZK_STREAM_GATHER`, on by default).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("CUZK_STREAM_GATHER").map_or(true, |v| v.trim() != "0"))
}

/// A query's gather plan (its bitmaps): the gathered MSM's where it gathers ([`gathers`]), and
/// where every base streams, what packs its tail scalars for their upload and counts a chunk's
/// nonzero ones. `None` where the split is not indexed by `u32`.
pub(super) fn plan(split: &Split) -> Option<Gather> {
    let g = Gather::of(split, side_threads());
    (u32::try_from(g.len()).is_ok()).then_some(g)
}

/// Whether a query with plan `g` gathers its bases: the switch is on and it pays (its share of
/// nonzero points is small enough).
pub(super) fn gathers(g: &Gather) -> bool {
    enabled() && g.pays()
}

impl PipelinedGpu {
    /// The MSM of `split` (its tail's MSM and its ones' batch addition) against `host_bases`,
    /// gathered by `g` in chunks of at most `capacity` points. `packed`: the query's packed tail
    /// scalars on the device, uploaded here where `None` (then kept for the query's next MSM).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn msm_gathered(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        curve: Curve,
        host_bases: &[u8],
        split: &Split,
        g: &Gather,
        packed: &mut Option<DevBuf>,
        capacity: u64,
    ) -> Result<Pieces> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let affine = curve.affine_bytes();
        let n = split.len();
        if host_bases.len() != n * affine || g.len() != n {
            return Err(backend_err(format!(
                "gathered MSM: {} bytes of bases, a plan of {} points, for {n} scalars",
                host_bases.len(),
                g.len()
            )));
        }
        let mut out = Pieces::default();
        let chunks = g.chunks(capacity as usize);
        let Some(most) = chunks.iter().map(|c| c.points()).max() else {
            return Ok(out);
        };
        let upload_scalars = packed.is_none();
        if upload_scalars {
            *packed = Some(cp.alloc(32 * g.tail_total.max(1), "gathered tail scalars")?);
        }
        let scalars = packed
            .as_mut()
            .ok_or_else(|| backend_err("gathered tail scalars missing"))?;
        let ones = chunks.iter().map(|c| c.ones).max().unwrap_or(0);
        let set = BitVec::all_set(ones.max(1));
        let mut bits = cp.alloc(8 * set.words().len(), "gathered ones bitmap")?;
        ring.upload(
            cp,
            &mut bits,
            0,
            as_bytes(set.words()),
            "gathered ones bitmap",
        )?;
        let mut bufs = [
            cp.alloc(most * affine, "gathered bases")?,
            cp.alloc(most * affine, "gathered bases")?,
        ];
        let mut read: [Option<CudaEvent>; 2] = [None, None];
        let threads = side_threads();
        let tail = as_bytes(&split.tail);
        // Chunk k+1's indices are found on a thread of their own while chunk k is packed, so the
        // copy pump never waits on them between chunks.
        let index = |k: usize| {
            g.indices(&chunks[k], threads)
                .ok_or_else(|| backend_err(format!("gathered chunk {k}: not a chunk of its plan")))
        };
        std::thread::scope(|s| -> Result<()> {
            let mut next = Some(s.spawn(|| index(0)));
            for (k, c) in chunks.iter().enumerate() {
                let idx = next
                    .take()
                    .ok_or_else(|| backend_err("gathered chunk: indices missing"))?
                    .join()
                    .map_err(|_| {
                        backend_err(format!("gathered chunk {k}: finding its indices panicked"))
                    })??;
                if k + 1 < chunks.len() {
                    next = Some(s.spawn(move || index(k + 1)));
                }
                let j = k % 2;
                if let Some(ev) = read[j].take() {
                    cp.stream.wait(&ev).map_err(|e| {
                        backend_err(format!("copy stream waiting for an MSM: {e:?}"))
                    })?;
                }
                ring.upload_with(
                    cp,
                    &mut bufs[j],
                    0,
                    idx.len(),
                    affine,
                    "gathered bases",
                    |host, first, count| {
                        gather_bytes(
                            host,
                            host_bases,
                            affine,
                            &idx[first..first + count],
                            threads,
                        )
                    },
                )?;
                if upload_scalars && c.tail > 0 {
                    ring.upload_with(
                        cp,
                        scalars,
                        32 * c.tail_before,
                        c.tail,
                        32,
                        "gathered tail scalars",
                        |host, first, count| {
                            gather_bytes(host, tail, 32, &idx[first..first + count], threads)
                        },
                    )?;
                }
                dev.stream.wait(&cp.mark()?).map_err(|e| {
                    backend_err(format!("kernels waiting for gathered bases: {e:?}"))
                })?;
                let k0 = dev.mark()?;
                if c.tail > 0 {
                    let live = c.tail as u64;
                    let plan = MsmPlan::on_sparse(dev, live, live, curve);
                    let at = scalars.at(32 * c.tail_before);
                    if let Some(q) = QueuedMsm::at(dev, bufs[j].ptr(), at, &plan)? {
                        out.msms.push(q);
                    }
                }
                if c.ones > 0 {
                    let at = bufs[j].at(c.tail * affine);
                    out.ones
                        .push(batch_add_at(dev, curve, at, bits.ptr(), c.ones as u64)?);
                }
                busy.spans.push((k0, dev.mark()?));
                read[j] = Some(dev.mark()?);
            }
            Ok(())
        })?;
        let [b0, b1] = bufs;
        self.free_after_kernels(vec![b0, b1, bits])?;
        Ok(out)
    }
}
