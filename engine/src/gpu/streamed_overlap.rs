//! The streamed tier's H-MSM with the queries' MSMs beside it (`StreamTier::overlap_slots`).
//!
//! One after another, the H-MSM is bound by its kernels (its bases cross PCIe in a fifth of its
//! time on an H100) and the queries' MSMs by their bases' copies (their tails are ~1 % nonzero:
//! little to compute, 28 GB to move at 32 GiB PoRep). Here both run in chunks through one set of
//! device slots, the queries' chunks spread between the H-MSM's ([`interleave`]): the copy
//! stream fills the slots behind an H-MSM chunk while its kernels run, and the queries' few
//! kernels follow.
//!
//! - The H-MSM's first chunks are queued while the host packs the queries ([`QueryPack`]: from
//!   the witness packed at synthesis, else from the dense splits and their plans), at most
//!   [`AHEAD`] of them ahead of the kernels; the rest are interleaved with the queries' once the
//!   packs are ready.
//! - Each query stays on the device packed, its one-bitmap beside: a chunk's scalars are
//!   unpacked into its slot (`unpack_witness`) just before its MSM, so the three queries' tails
//!   (4.2 GB each, unpacked) never live at once. `b`'s serve `b_g1` and `b_g2`.
//! - A query chunk with neither nonzero tail scalars nor ones is skipped: its bases add nothing.
//! - Where a query's tail does not pack within `OVERLAP_TAIL_DEN`, the H-MSM finishes through
//!   the slots and the queries run one after another (`streamed.rs`), within the same bytes.
//! - `CUZK_STREAM_OVERLAP=0` turns it off ([`enabled`]).

use std::collections::VecDeque;

use cudarc::driver::CudaEvent;

use super::batch_add::batch_add_at;
use super::buf::DevBuf;
use super::msm::{MsmPlan, QueuedMsm};
use super::points::Curve;
use super::ring::Ring;
use super::stream_plan::StreamTier;
use super::stream_plan::OVERLAP_TAIL_DEN;
use super::streamed::{Busy, HostSplits, Pieces, Plans};
use super::{as_bytes, backend_err, PipelinedGpu, Result};
use crate::gather::Gather;
use crate::prover::Split;
use crate::query_pack::QueryPack;
use cuzk_srs::Srs;

/// Whether the streamed tier runs the queries beside the H-MSM where its plan has slots
/// (`CUZK_STREAM_OVERLAP`, on by default; `0` runs them one after another, in the same bytes).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("CUZK_STREAM_OVERLAP").map_or(true, |v| v.trim() != "0"))
}

/// H-MSM chunks queued ahead of the kernels while the host builds the splits: enough to keep the
/// kernel stream busy, few enough that the queries' chunks join the rest.
pub const AHEAD: usize = 2;

/// The order of the overlapped step's chunks: `(job, chunk)` with job 0 the H-MSM's `h` chunks
/// and job `1 + q` query `q`'s `queries[q]` chunks. Every chunk once, each job's in order; the
/// queries' chunks, query by query, spread evenly after the H-MSM's chunks (after each H-MSM
/// chunk its share, so that they fill the slots while it runs); with no H-MSM chunk left, the
/// queries' in a row.
pub fn interleave(h: usize, queries: &[usize]) -> Vec<(usize, usize)> {
    let flat: Vec<(usize, usize)> = queries
        .iter()
        .enumerate()
        .flat_map(|(q, &n)| (0..n).map(move |k| (1 + q, k)))
        .collect();
    let total = flat.len();
    let mut out = Vec::with_capacity(h + total);
    let mut next = flat.into_iter();
    for i in 0..h {
        out.push((0, i));
        let share = (i + 1) * total / h - i * total / h;
        out.extend(next.by_ref().take(share));
    }
    out.extend(next);
    out
}

/// One query of the overlapped step: its bases on the host and its packed scalars on the device.
pub(super) struct QueryJob<'h> {
    pub curve: Curve,
    pub host_bases: &'h [u8],
    /// Points a chunk: the slot's bytes hold half as many G2 bases.
    pub chunk: u64,
    pub pack: &'h QueryPack,
    pub packed: &'h PackedQuery,
}

impl QueryJob<'_> {
    fn len(&self) -> u64 {
        self.pack.len as u64
    }
    fn chunks(&self) -> usize {
        self.len().div_ceil(self.chunk) as usize
    }
}

/// A query's tail packed on the device (`unpack_witness`'s inputs) and its one-bitmap.
pub(super) struct PackedQuery {
    others: DevBuf,
    ranks: DevBuf,
    values: DevBuf,
    ones: Option<DevBuf>,
}

impl PackedQuery {
    fn bufs(self) -> Vec<DevBuf> {
        let mut v = vec![self.others, self.ranks, self.values];
        v.extend(self.ones);
        v
    }
}

/// The queries' packs from their dense splits and plans, where each plan is its split's and
/// the tails together are within [`OVERLAP_TAIL_DEN`] ([`QueryPack::within`]).
pub(super) fn packs_of_splits(
    (l, a, b): &HostSplits,
    [pl, pa, pb]: &Plans,
) -> Option<Box<[QueryPack; 3]>> {
    fn own<'g>(s: &Split, g: &'g Option<Gather>) -> Option<&'g Gather> {
        g.as_ref().filter(|g| g.len() == s.len())
    }
    let (gl, ga, gb) = (own(l, pl)?, own(a, pa)?, own(b, pb)?);
    let tails = gl.tail_total + ga.tail_total + gb.tail_total;
    let lens = [l.len(), a.len(), b.len()];
    QueryPack::tails_within(tails, lens, OVERLAP_TAIL_DEN).then(|| {
        Box::new([
            QueryPack::of_split(l, gl),
            QueryPack::of_split(a, ga),
            QueryPack::of_split(b, gb),
        ])
    })
}

/// What the host builds while the H-MSM's first chunks run: the queries packed from the packed
/// witness, or their dense splits and plans.
pub(super) enum Built {
    Packs(Box<[QueryPack; 3]>),
    Splits(Box<(HostSplits, Plans)>),
}

/// The queries `(l, a, b)` packed from `r`'s packed witness by its recording's densities, where
/// it has one and the packs are within [`OVERLAP_TAIL_DEN`] together.
pub(super) fn packs_from_witness(r: &crate::prover::Recorded) -> Option<Box<[QueryPack; 3]>> {
    let w = r.packed.as_ref()?;
    if !r.splits_pending || w.len != r.inputs.len() + r.aux.len() {
        return None;
    }
    let [a_aux, b_in, b_aux] = r.rec.densities();
    let threads = crate::gather::side_threads();
    let packs = QueryPack::queries(w, r.inputs.len(), [&a_aux, &b_in, &b_aux], threads)?;
    QueryPack::within(&packs, OVERLAP_TAIL_DEN).then(|| Box::new(packs))
}

/// The overlapped step's device slots: `bases` (a chunk of G1 bases or half a chunk of G2) and
/// `scalars` (a chunk), each reused once the kernels that read it are done.
pub(super) struct Slots {
    bases: Vec<DevBuf>,
    scalars: Vec<DevBuf>,
    read: Vec<Option<CudaEvent>>,
    next: usize,
    /// A chunk's words of zeros: the unpacking's one-bitmap (a tail is zero where it is one).
    zeros: DevBuf,
    chunk: u64,
}

impl PipelinedGpu {
    /// `count` slots of `chunk` points, allocated on the copy stream.
    pub(super) fn overlap_slots(&self, count: u64, chunk: u64) -> Result<Slots> {
        let cp = &self.stream_copy;
        let count = count.max(2) as usize;
        let mut bases = Vec::with_capacity(count);
        let mut scalars = Vec::with_capacity(count);
        for _ in 0..count {
            bases.push(cp.alloc(chunk as usize * 96, "overlap slot bases")?);
            scalars.push(cp.alloc(chunk as usize * 32, "overlap slot scalars")?);
        }
        Ok(Slots {
            bases,
            scalars,
            read: (0..count).map(|_| None).collect(),
            next: 0,
            zeros: cp.alloc_zeroed(chunk.div_ceil(64) as usize * 8, "overlap zero words")?,
            chunk,
        })
    }

    /// Frees the slots once the kernels are past them.
    pub(super) fn free_slots(&self, s: Slots) -> Result<()> {
        let mut bufs = s.bases;
        bufs.extend(s.scalars);
        bufs.push(s.zeros);
        self.free_after_kernels(bufs)
    }

    /// A query's pack uploaded through the ring.
    pub(super) fn upload_packed_query(
        &self,
        ring: &mut Ring,
        pack: &QueryPack,
        what: &str,
    ) -> Result<PackedQuery> {
        let mut part = |bytes: &[u8]| self.upload_new(ring, bytes, what);
        let others = part(as_bytes(&pack.tail))?;
        let ranks = part(as_bytes(&pack.ranks()))?;
        let values = part(as_bytes(&pack.values))?;
        let ones = if pack.ones_total() > 0 {
            Some(part(as_bytes(&pack.ones))?)
        } else {
            None
        };
        Ok(PackedQuery {
            others,
            ranks,
            values,
            ones,
        })
    }

    /// Frees the packed queries once the kernels are past them.
    pub(super) fn free_packed(&self, packed: Vec<PackedQuery>) -> Result<()> {
        self.free_after_kernels(packed.into_iter().flat_map(PackedQuery::bufs).collect())
    }

    /// The next slot: the copy stream waits for the kernels that last read it.
    fn slot(&self, s: &mut Slots) -> Result<usize> {
        let j = s.next % s.bases.len();
        s.next += 1;
        if let Some(ev) = s.read[j].take() {
            self.stream_copy
                .stream
                .wait(&ev)
                .map_err(|e| backend_err(format!("copy stream waiting for a slot: {e:?}")))?;
        }
        Ok(j)
    }

    /// Copies `src` (bases) into slot `j` and orders the kernel stream after it.
    fn fill(
        &self,
        ring: &mut Ring,
        s: &mut Slots,
        j: usize,
        src: &[u8],
        pinned: bool,
    ) -> Result<()> {
        ring.upload_from(
            &self.stream_copy,
            &mut s.bases[j],
            0,
            src,
            pinned,
            "overlap bases",
        )?;
        self.kernels
            .stream
            .wait(&self.stream_copy.mark()?)
            .map_err(|e| backend_err(format!("kernels waiting for overlap bases: {e:?}")))
    }

    /// Queues the H-MSM's chunk `k` (`scalars`: all `n` of them, dense, on the device); returns
    /// the event after its kernels.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn overlap_h_chunk(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        s: &mut Slots,
        (host_bases, pinned): (&[u8], bool),
        scalars: &DevBuf,
        n: u64,
        k: usize,
        out: &mut Pieces,
    ) -> Result<CudaEvent> {
        let dev = &self.kernels;
        let lo = k as u64 * s.chunk;
        let hi = (lo + s.chunk).min(n);
        let j = self.slot(s)?;
        self.fill(
            ring,
            s,
            j,
            &host_bases[lo as usize * 96..hi as usize * 96],
            pinned,
        )?;
        let k0 = dev.mark()?;
        let plan = MsmPlan::on_sparse(dev, hi - lo, hi - lo, Curve::G1);
        if let Some(q) = QueuedMsm::at(dev, s.bases[j].ptr(), scalars.at(lo as usize * 32), &plan)?
        {
            out.msms.push(q);
        }
        busy.spans.push((k0, dev.mark()?));
        s.read[j] = Some(dev.mark()?);
        dev.mark()
    }

    /// Queues query `q`'s chunk `k`: its bases copied into a slot, its tail scalars unpacked
    /// there, its MSM and its ones' batch addition. Skipped where the chunk has neither.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn overlap_query_chunk(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        s: &mut Slots,
        q: &QueryJob,
        pinned: bool,
        k: usize,
        out: &mut Pieces,
    ) -> Result<()> {
        let dev = &self.kernels;
        let affine = q.curve.affine_bytes();
        let lo = k as u64 * q.chunk;
        let hi = (lo + q.chunk).min(q.len());
        let live = q.pack.tail_between(lo as usize, hi as usize) as u64;
        let ones = q.pack.ones_between(lo as usize, hi as usize) as u64;
        if live == 0 && ones == 0 {
            return Ok(());
        }
        let len = hi - lo;
        let j = self.slot(s)?;
        let src = &q.host_bases[lo as usize * affine..hi as usize * affine];
        self.fill(ring, s, j, src, pinned)?;
        let k0 = dev.mark()?;
        if live > 0 {
            let word = (lo / 64) as usize;
            crate::gpu_launch!(
                dev,
                "unpack_witness",
                super::device::grid(len, 256),
                &s.scalars[j].ptr(),
                &s.zeros.ptr(),
                &q.packed.others.at(word * 8),
                &q.packed.ranks.at(word * 4),
                &q.packed.values.ptr(),
                &len
            )?;
            let plan = MsmPlan::on_sparse(dev, len, live, q.curve);
            if let Some(m) = QueuedMsm::at(dev, s.bases[j].ptr(), s.scalars[j].ptr(), &plan)? {
                out.msms.push(m);
            }
        }
        if let (Some(bits), true) = (&q.packed.ones, ones > 0) {
            out.ones.push(batch_add_at(
                dev,
                q.curve,
                s.bases[j].ptr(),
                bits.at((lo / 64) as usize * 8),
                len,
            )?);
        }
        busy.spans.push((k0, dev.mark()?));
        s.read[j] = Some(dev.mark()?);
        Ok(())
    }
}

/// What the overlapped step leaves: the H-MSM's pieces, and the queries' (`l, a, b_g1, b_g2`)
/// where they ran beside it, else the host splits and plans for the steps after.
pub(super) struct Overlapped {
    pub h: Pieces,
    pub queries: std::result::Result<[Pieces; 4], (HostSplits, Plans)>,
    /// When the splits and plans were ready, and the H-MSM chunks queued before.
    pub splits_ready: std::time::Instant,
    pub h_ahead: usize,
}

impl PipelinedGpu {
    /// The H-MSM over `h` (its `n` scalars on the device) with the queries' MSMs beside it,
    /// through `tier.overlap_slots` slots of `tier.chunk` points; `build` packs the queries (or
    /// makes their splits and plans) on a thread of its own meanwhile.
    pub(super) fn h_msm_with_queries(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        srs: &Srs,
        (h, n): (&DevBuf, u64),
        tier: StreamTier,
        build: impl FnOnce() -> Built + Send,
    ) -> Result<Overlapped> {
        let c = tier.chunk.max(64) / 64 * 64;
        let h_bases = as_bytes(srs.h());
        if h_bases.len() as u64 != n * 96 {
            return Err(backend_err(format!(
                "H-MSM: {} bytes of bases for {n} scalars",
                h_bases.len()
            )));
        }
        let pinned = tier.pinned_bases;
        let mut slots = self.overlap_slots(tier.overlap_slots, c)?;
        let h_chunks = n.div_ceil(c) as usize;
        let mut h_out = Pieces::default();
        // The H-MSM's chunk `k` through the slots.
        let h_chunk = |ring: &mut Ring, busy: &mut Busy, slots: &mut Slots, out: &mut Pieces, k| {
            self.overlap_h_chunk(ring, busy, slots, (h_bases, pinned), h, n, k, out)
        };
        let mut k = 0usize;
        let built = std::thread::scope(|sc| -> Result<Built> {
            let job = sc.spawn(build);
            let mut queued = VecDeque::new();
            while k < h_chunks && !job.is_finished() {
                if queued.len() >= AHEAD {
                    keep_ahead(&mut queued)?;
                    continue;
                }
                queued.push_back(h_chunk(ring, busy, &mut slots, &mut h_out, k)?);
                k += 1;
            }
            job.join()
                .map_err(|_| backend_err("the thread building the queries' splits panicked"))
        })?;
        let (splits_ready, h_ahead) = (std::time::Instant::now(), k);
        let packs = match built {
            Built::Packs(p) => Ok(p),
            Built::Splits(b) => {
                let (host, plans) = *b;
                match packs_of_splits(&host, &plans) {
                    Some(p) => Ok(p),
                    None => Err((host, plans)),
                }
            }
        };
        log_tail_shares(&packs);
        let packs = match packs {
            Ok(p) => p,
            Err(fallback) => {
                // The queries run one after another after the H-MSM (`streamed.rs`).
                for k in k..h_chunks {
                    h_chunk(ring, busy, &mut slots, &mut h_out, k)?;
                }
                self.free_slots(slots)?;
                return Ok(Overlapped {
                    h: h_out,
                    queries: Err(fallback),
                    splits_ready,
                    h_ahead,
                });
            }
        };
        let [l, a, b] = &*packs;
        let packed = vec![
            self.upload_packed_query(ring, l, "l scalars")?,
            self.upload_packed_query(ring, a, "a scalars")?,
            self.upload_packed_query(ring, b, "b scalars")?,
        ];
        let g2_chunk = ((c / 2) / 64 * 64).max(64);
        let jobs = [
            (Curve::G1, as_bytes(srs.l()), c, l, &packed[0]),
            (Curve::G1, as_bytes(srs.a()), c, a, &packed[1]),
            (Curve::G1, as_bytes(srs.b_g1()), c, b, &packed[2]),
            (Curve::G2, as_bytes(srs.b_g2()), g2_chunk, b, &packed[2]),
        ]
        .map(|(curve, host_bases, chunk, pack, packed)| QueryJob {
            curve,
            host_bases,
            chunk,
            pack,
            packed,
        });
        for (q, name) in jobs.iter().zip(["l", "a", "b_g1", "b_g2"]) {
            let bases = q.host_bases.len() / q.curve.affine_bytes();
            if bases as u64 != q.len() {
                return Err(backend_err(format!(
                    "{name}: the parameters have {bases} bases, the partition {} scalars",
                    q.len()
                )));
            }
        }
        let mut outs: [Pieces; 4] = Default::default();
        let order = interleave(h_chunks - k, &jobs.each_ref().map(QueryJob::chunks));
        for (j, i) in order {
            if j == 0 {
                h_chunk(ring, busy, &mut slots, &mut h_out, k + i)?;
            } else {
                self.overlap_query_chunk(
                    ring,
                    busy,
                    &mut slots,
                    &jobs[j - 1],
                    pinned,
                    i,
                    &mut outs[j - 1],
                )?;
            }
        }
        self.free_slots(slots)?;
        self.free_packed(packed)?;
        Ok(Overlapped {
            h: h_out,
            queries: Ok(outs),
            splits_ready,
            h_ahead,
        })
    }
}

/// Logs once a process the queries' tail shares (neither zero nor one) and whether they ran
/// beside the H-MSM: what decides the overlapped step, seen on real partitions.
fn log_tail_shares(packs: &std::result::Result<Box<[QueryPack; 3]>, (HostSplits, Plans)>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let share = |tail: usize, len: usize| 100.0 * tail as f64 / len.max(1) as f64;
        let (shares, beside) = match packs {
            Ok(p) => (p.each_ref().map(|q| share(q.values.len(), q.len)), true),
            Err(((l, a, b), plans)) => {
                let tail = |g: &Option<Gather>| g.as_ref().map_or(0, |g| g.tail_total);
                (
                    [
                        share(tail(&plans[0]), l.len()),
                        share(tail(&plans[1]), a.len()),
                        share(tail(&plans[2]), b.len()),
                    ],
                    false,
                )
            }
        };
        log::info!(
            "streamed tier: the queries' tails are {:.2} / {:.2} / {:.2} % of l / a / b (bound: {:.2} % together); the queries run {}",
            shares[0],
            shares[1],
            shares[2],
            100.0 / OVERLAP_TAIL_DEN as f64,
            if beside { "beside the H-MSM" } else { "after the H-MSM" }
        );
    });
}

/// Waits for the oldest of the H-MSM chunks queued ahead once there are [`AHEAD`] of them.
pub(super) fn keep_ahead(queued: &mut VecDeque<CudaEvent>) -> Result<()> {
    while queued.len() >= AHEAD {
        if let Some(ev) = queued.pop_front() {
            ev.synchronize()
                .map_err(|e| backend_err(format!("waiting for an H-MSM chunk: {e:?}")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(h: usize, queries: &[usize]) {
        let order = interleave(h, queries);
        let total: usize = h + queries.iter().sum::<usize>();
        assert_eq!(order.len(), total, "every chunk once");
        // Each job's chunks in order, none twice.
        let mut next = vec![0usize; 1 + queries.len()];
        for &(job, k) in &order {
            assert_eq!(k, next[job], "job {job} out of order in {order:?}");
            next[job] += 1;
        }
        assert_eq!(next[0], h);
        for (q, &n) in queries.iter().enumerate() {
            assert_eq!(next[1 + q], n);
        }
        // The queries' chunks follow the H-MSM's evenly: between two H-MSM chunks, the count
        // differs from the even share by less than one.
        if h > 0 {
            let t = total - h;
            assert_eq!(
                order[0],
                (0, 0),
                "an H-MSM chunk first, to cover the first copies"
            );
            let mut run = 0;
            let mut runs = vec![];
            for &(job, _) in &order[1..] {
                if job == 0 {
                    runs.push(run);
                    run = 0;
                } else {
                    run += 1;
                }
            }
            runs.push(run);
            assert_eq!(runs.len(), h);
            for r in runs {
                assert!(
                    r * h <= t + h && r * h + h >= t,
                    "{r} of {t} after one of {h}"
                );
            }
        }
    }

    #[test]
    fn the_queries_chunks_are_spread_evenly_between_the_h_msms_each_in_order() {
        check(16, &[16, 16, 16, 32]);
        check(4, &[16, 16, 4, 8]);
        check(3, &[1, 0, 2, 0]);
        check(7, &[]);
        check(0, &[3, 2]);
        check(1, &[5]);
        check(64, &[16, 16, 4, 8]);
        assert_eq!(interleave(2, &[1, 1]), [(0, 0), (1, 0), (0, 1), (2, 0)]);
        assert_eq!(interleave(0, &[1, 1]), [(1, 0), (2, 0)]);
    }

    #[test]
    fn the_queries_join_the_overlap_only_with_their_own_plans_and_within_the_bound_together() {
        let z = || blstrs::Scalar::from(0u64);
        let mut scalars = vec![z(); 640];
        scalars[3] = blstrs::Scalar::from(9u64);
        let sparse = Split::new(scalars.clone());
        // 40 of 64 in the tail: dense alone, within the bound beside two sparse queries of 640.
        let mut small = vec![z(); 64];
        for s in small.iter_mut().take(40) {
            *s = blstrs::Scalar::from(5u64);
        }
        let dense = Split::new(small);
        let plan = |s: &Split| Some(Gather::of(s, 2));
        let host = (sparse.clone(), sparse.clone(), dense.clone());
        let plans = [plan(&sparse), plan(&sparse), plan(&dense)];
        let packs = packs_of_splits(&host, &plans).expect("2 + 40 of a bound of 20 + 20 + 2");
        assert_eq!(packs[2].values.len(), 40);
        // Without a plan, or with another split's, or over the bound, they run in turn.
        assert!(packs_of_splits(&host, &[plan(&sparse), None, plan(&dense)]).is_none());
        assert!(packs_of_splits(&host, &[plan(&sparse), plan(&dense), plan(&dense)]).is_none());
        let host = (dense.clone(), dense.clone(), dense.clone());
        assert!(packs_of_splits(&host, &[plan(&dense), plan(&dense), plan(&dense)]).is_none());
    }
}
