//! The plan of an MSM on the device ([`MsmPlan`]): the window size from a cost model fitted to
//! measured phase times ([`window_bits`]; [`sparse_window_bits`] for scalars of which at most
//! `live` are nonzero), each window's nonzero digits in equal shares over the accumulation
//! threads, the device scratch it needs ([`MsmPlan::scratch_bytes`], what the VRAM budget
//! reserves) and its launches in order ([`MsmPlan::steps`], [`MsmStep`]). `msm.rs` queues them.

use super::device::GpuDevice;
use super::points::Curve;

/// Scalar bits covered by the windows (255-bit scalars plus the signed-digit carry).
const SCALAR_BITS: u32 = 256;
/// Largest window: 2^23 buckets per window (the tile scan handles up to 1024 × 1024 tiles).
pub const MAX_WINDOW_BITS: u32 = 24;
/// Accumulation threads an MSM aims for (about four waves of 512 threads on 132 SMs): each gets
/// an equal share of every window's sorted points. On a device the count is rounded to whole
/// waves of the accumulation kernel's resident threads (`MsmPlan::on`), at most
/// `MAX_THREADS`.
const TARGET_THREADS: u64 = 1 << 18;
const MAX_THREADS: u64 = TARGET_THREADS * 5 / 4;
/// The cost model, in picoseconds on an H200, fitted to `CUZK_MSM_PROFILE` phase times and window
/// sweeps (G1 at 2^24 and 2^26, G2 at 2^24; c = 16, 20, 22; the additions and reduction refitted
/// to the lockstep G1 accumulation and the pair-round reduction, 2026-12-01). Per point and
/// window: the sort (its counters leave the L2 cache beyond 16-bit windows, so it grows with c)
/// and one mixed addition (a little dearer with smaller buckets); per bucket: the reduction.
fn point_window_ps(c: u32, curve: Curve) -> u64 {
    let wide = c.saturating_sub(16) as u64;
    let add = match curve {
        Curve::G1 => 430,
        Curve::G2 => 1_750,
    };
    55 + 12 * wide + add * (40 + wide) / 40
}
fn bucket_ps(curve: Curve) -> u64 {
    match curve {
        Curve::G1 => 2_600,
        Curve::G2 => 5_700,
    }
}
/// A curve's accumulation kernel on `dev` and its threads per block. The G1 lockstep kernel runs
/// blocks of the size it was compiled for (its `__launch_bounds__`, `CUZK_G1_LOCKSTEP_THREADS` in
/// cuda-src/msm.cu, read back from the kernel); the others 128 (the kernels index by global
/// thread only). `CUZK_MSM_LOCKSTEP=0` (read once): G1 runs the 128-thread `msm_accumulate_g1`
/// instead of `msm_accumulate_g1_lockstep`, one block per SM whose warps take every addition
/// together (a barrier each) and so share the instruction cache (−13 % at 2^26 on an H200). The
/// same for G2, and the G2 addition expanded in its loop, measured no gain and are not kept
/// (docs/BENCHMARKS.md); G2 blocks of 32 or 64 threads changed nothing either.
pub fn accumulate_kernel(dev: &GpuDevice, curve: Curve) -> (&'static str, u32) {
    static LOCKSTEP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let lockstep = *LOCKSTEP
        .get_or_init(|| std::env::var("CUZK_MSM_LOCKSTEP").map_or(true, |v| v.trim() != "0"));
    match curve {
        Curve::G1 if lockstep => {
            let k = "msm_accumulate_g1_lockstep";
            (k, dev.max_block_threads(k).unwrap_or(128))
        }
        Curve::G1 => ("msm_accumulate_g1", 128),
        Curve::G2 => ("msm_accumulate_g2", 128),
    }
}

/// Whether the head partials of a bucket that spans many shares are summed in a tree before the
/// fix-up (default) or added one after another by the fix-up thread (`CUZK_MSM_HEAD_TREE=0`,
/// read once; the serial fix-up cost a whole MSM's time again for heavily repeated scalars).
fn fold_heads() -> bool {
    static TREE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TREE.get_or_init(|| std::env::var("CUZK_MSM_HEAD_TREE").map_or(true, |v| v.trim() != "0"))
}

/// Bucket counters per histogram / scatter launch (`MsmPlan::sort_group`): 8 MiB, a sixth of
/// an H200's L2 cache (four 2^19-bucket windows; every window at once up to 2^16 buckets).
const SORT_GROUP_BYTES: u64 = 8 << 20;

/// Bins a window of the two-pass sort's coarse pass (cuda-src/msm.cu `MSM_SORT_BINS`).
pub(super) const SORT_BINS: u32 = 32;

/// The most sectors of bucket-run tails (32 bytes a bucket of a sort launch) that the one-pass
/// scatter may keep in L2 (`MsmPlan::two_pass_sort`): 24 MiB, half an H200's L2.
const SORT_TAIL_BYTES: u64 = 24 << 20;

/// The top window must keep at least this many bits: a narrow top window puts every point into a
/// handful of buckets (2^22 points in 8 buckets at c = 18), which serialises their sums.
const MIN_TOP_BITS: u32 = 8;

/// Windows of `c` bits covering 256 bits.
pub fn windows_of(c: u32) -> u32 {
    SCALAR_BITS.div_ceil(c)
}

/// Bits of the top window of `c`-bit windows over 256 bits.
pub fn top_bits(c: u32) -> u32 {
    SCALAR_BITS - (windows_of(c) - 1) * c
}

/// Reading one scalar (a 32-byte sector) in a histogram or scatter pass, in picoseconds on an
/// H200 (~3.3 TB/s): what a zero scalar costs the sort, which skips its digits but still reads it
/// (for a live one it is part of the fitted `point_window_ps`).
const SCALAR_READ_PS: u64 = 10;

/// The window sizes an MSM of `n` points may take: a top window of at least `MIN_TOP_BITS` bits
/// (or all of c), and bucket sums no larger than the bases themselves (at least 64 MiB).
fn window_candidates(n: u64, curve: Curve) -> impl Iterator<Item = u32> {
    let cap = (n * curve.affine_bytes() as u64).max(64 << 20);
    (4..=MAX_WINDOW_BITS)
        .filter(|&c| top_bits(c) >= MIN_TOP_BITS.min(c))
        .filter(move |&c| {
            windows_of(c) as u64 * (1u64 << (c - 1)) * curve.xyzz_bytes() as u64 <= cap
        })
}

/// Window size `c` minimising the cost model over windows × (points + buckets), among the
/// `window_candidates`.
pub fn window_bits(n: u64, curve: Curve) -> u32 {
    window_candidates(n, curve)
        .min_by_key(|&c| {
            windows_of(c) as u64
                * (n * point_window_ps(c, curve) + (1u64 << (c - 1)) * bucket_ps(curve))
        })
        .unwrap_or(4)
}

/// Window size for `n` scalars of which at most `live` are nonzero (a witness tail: ~1 % of a
/// PoRep partition's): the live digits cost their sort and addition, every bucket its reduction,
/// and each zero scalar a read per histogram and scatter launch (`SCALAR_READ_PS`), so sparse
/// scalars take narrow windows (at most 17 bits for 1 % of 130 M, where the dense choice is 22:
/// by this model its 2^21 buckets a window and its zero reads, once a window, would cost most of
/// such an MSM). Only `window_candidates` whose plan needs no more device memory than the dense
/// plan of `n` scalars (`scratch_bytes`, what the VRAM budget reserves) are taken; `live ≥ n` is
/// `window_bits`.
pub fn sparse_window_bits(n: u64, live: u64, curve: Curve) -> u32 {
    let dense = window_bits(n, curve);
    if live >= n {
        return dense;
    }
    let budget = MsmPlan::with_window(n, curve, dense).scratch_bytes();
    window_candidates(n, curve)
        .map(|c| MsmPlan::with_window(n, curve, c).with_live(live))
        .filter(|p| p.scratch_bytes() <= budget)
        .min_by_key(|p| {
            let launches = p.sort_ranges(p.sort_group()).len() as u64;
            p.windows as u64
                * (live * point_window_ps(p.c, curve) + p.buckets as u64 * bucket_ps(curve))
                + (n - live) * 2 * launches * SCALAR_READ_PS
        })
        .map_or(dense, |p| p.c)
}

/// Everything about one MSM's plan.
#[derive(Clone, Copy, Debug)]
pub struct MsmPlan {
    pub n: u64,
    pub curve: Curve,
    pub c: u32,
    pub windows: u32,
    pub buckets: u32,
    /// Bucket-reduction segments per window.
    pub segments: u32,
    /// Sorted points per accumulation thread and window for a window of `stride()` nonzero
    /// digits: it fixes the threads per window (ceil(stride / per)); a window with fewer digits
    /// spreads them evenly over the same threads (cuda-src/msm.cu, `window_share`).
    pub per_thread: u32,
    /// An upper bound on the nonzero scalars (`n` unless known, e.g. counted when a witness tail
    /// was split): each window's sorted list holds that many places, and the shares are sized
    /// for it. A bound that is too small makes a wrong sum (the kernels drop the digits past it),
    /// never a write out of place.
    pub live: u64,
}

impl MsmPlan {
    pub fn new(n: u64, curve: Curve) -> Self {
        Self::with_window(n, curve, window_bits(n, curve))
    }

    /// The plan with `c`-bit windows (4 ≤ c ≤ MAX_WINDOW_BITS).
    pub fn with_window(n: u64, curve: Curve, c: u32) -> Self {
        let c = c.clamp(4, MAX_WINDOW_BITS);
        let windows = windows_of(c);
        let buckets = 1u32 << (c - 1);
        // Segments of 8 to 64 buckets, aiming at 2^17 reduction threads in all.
        let seg_len = ((buckets as u64 * windows as u64) >> 17)
            .clamp(8, 64)
            .min(buckets as u64);
        let segments = buckets / (1u32 << seg_len.ilog2());
        MsmPlan {
            n,
            curve,
            c,
            windows,
            buckets,
            segments,
            per_thread: 16,
            live: n,
        }
        .with_live(n)
    }

    /// The plan for `n` scalars of which at most `live` are nonzero: its window from
    /// [`sparse_window_bits`], its sorted lists and shares sized for `live`.
    pub fn sparse(n: u64, live: u64, curve: Curve) -> Self {
        Self::with_window(n, curve, sparse_window_bits(n, live, curve)).with_live(live)
    }

    /// The same window with at most `live` nonzero scalars (clamped to `n`): sorted lists of
    /// that many places, and the share per thread for them (`TARGET_THREADS` in all).
    pub fn with_live(mut self, live: u64) -> Self {
        self.live = live.min(self.n);
        self.per_thread = (self.stride() * self.windows as u64)
            .div_ceil(TARGET_THREADS)
            .clamp(16, u32::MAX as u64) as u32;
        self
    }

    /// Places of each window's sorted list (at least one).
    pub fn stride(&self) -> u64 {
        self.live.max(1)
    }

    /// The plan for `dev`: as [`new`](Self::new), with the accumulation's share per thread chosen
    /// so that its threads fill whole waves of the kernel's resident threads on this GPU (every
    /// thread does the same number of additions, so a last wave of 76 % left a quarter of the
    /// GPU idle for one wave's time: ~3 % of the accumulation on an H200).
    pub fn on(dev: &GpuDevice, n: u64, curve: Curve) -> Self {
        Self::on_sparse(dev, n, n, curve)
    }

    /// The plan for `dev` of `n` scalars, at most `live` of them nonzero: [`sparse`](Self::sparse),
    /// its share filling whole waves as in [`on`](Self::on).
    pub fn on_sparse(dev: &GpuDevice, n: u64, live: u64, curve: Curve) -> Self {
        let plan = Self::sparse(n, live, curve);
        let (kernel, block) = accumulate_kernel(dev, curve);
        match dev.resident_threads(kernel, block) {
            Some(resident) if resident > 0 => plan.filling_waves(resident),
            _ => plan,
        }
    }

    /// The share per thread for whole waves of `resident` threads: the whole number of waves
    /// nearest `TARGET_THREADS` (at least one, at most `MAX_THREADS` threads).
    pub fn filling_waves(self, resident: u64) -> Self {
        let waves = ((TARGET_THREADS + resident / 2) / resident).max(1);
        let threads = (waves * resident).min(MAX_THREADS);
        let per = (self.stride() * self.windows as u64)
            .div_ceil(threads)
            .clamp(16, u32::MAX as u64) as u32;
        MsmPlan {
            per_thread: per,
            ..self
        }
    }

    /// The same plan with `per` points per accumulation thread (≥ 1; small shares split buckets
    /// across many threads, which the tests use to exercise the fix-up).
    pub fn with_share(mut self, per: u32) -> Self {
        self.per_thread = per.max(1);
        self
    }

    /// Windows per histogram / scatter launch: as many as keep their bucket counters within
    /// `SORT_GROUP_BYTES` (at least one), so that the counters' atomics hit the L2 cache while
    /// the scatter's writes stream past it. `CUZK_MSM_SORT_GROUP_MIB` (read once) overrides the
    /// budget; 0 means all windows in one launch.
    pub fn sort_group(&self) -> u32 {
        static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let bytes = *BYTES.get_or_init(|| {
            match std::env::var("CUZK_MSM_SORT_GROUP_MIB")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                Some(0) => u64::MAX,
                Some(m) => m << 20,
                None => SORT_GROUP_BYTES,
            }
        });
        (bytes / (4 * self.buckets as u64)).clamp(1, self.windows as u64) as u32
    }

    /// The window ranges [w0, w1) of the histogram and scatter launches, `sort_group` windows
    /// each (the last may have fewer).
    pub fn sort_launches(&self) -> Vec<(u32, u32)> {
        self.sort_ranges(self.sort_group())
    }
    /// The ranges of `group` windows each (1 ≤ group ≤ windows).
    fn sort_ranges(&self, group: u32) -> Vec<(u32, u32)> {
        (0..self.windows)
            .step_by(group as usize)
            .map(|w0| (w0, (w0 + group).min(self.windows)))
            .collect()
    }

    /// Whether the sort runs in two passes (cuda-src/msm.cu, step 3): when the tails of a
    /// launch's bucket runs, a 32-byte sector each, take more than `SORT_TAIL_BYTES`. On an H200:
    /// G1 2^26 (c = 20) 464.6 → 447.0 ms and G2 2^24 336.2 → 331.3 ms with two passes, but G1
    /// 2^24 (c = 16, whose tails fit) 135.8 → 147.7 ms.
    pub fn two_pass_sort(&self) -> bool {
        self.sort_group() as u64 * self.buckets as u64 * 32 > SORT_TAIL_BYTES
    }

    /// Buckets per bin of the sort's coarse pass, as a power of two: `SORT_BINS` bins a window
    /// (fewer when a window has fewer buckets).
    pub fn sort_bin_bits(&self) -> u32 {
        self.buckets
            .trailing_zeros()
            .saturating_sub(SORT_BINS.trailing_zeros())
    }

    /// Rounds of the tree fold of head partials: enough for a bucket spanning every share of a
    /// window (ceil(log2(threads per window))).
    pub fn head_rounds(&self) -> u32 {
        64 - (self.threads_per_window() - 1).leading_zeros()
    }

    pub(super) fn threads_per_window(&self) -> u64 {
        self.stride().div_ceil(self.per_thread as u64).max(1)
    }
    pub(super) fn tile(&self) -> u32 {
        self.buckets.clamp(32, 1024)
    }
    pub(super) fn tiles(&self) -> u32 {
        self.buckets.div_ceil(self.tile())
    }

    /// Device bytes this MSM allocates besides its bases and scalars (an upper bound, also for
    /// the plan `on` a device picks: its accumulation may take up to `MAX_THREADS` threads).
    pub fn scratch_bytes(&self) -> u64 {
        let w = self.windows as u64;
        let slots = w * self.buckets as u64;
        let xyzz = self.curve.xyzz_bytes() as u64;
        let segs = w * self.segments as u64;
        // A device's plan has at most MAX_THREADS + w accumulation threads (whole waves, rounded
        // up per window), and never more than one per 16 points and window.
        let most = (w * self.stride().div_ceil(16)).min(MAX_THREADS + w);
        let threads = (w * self.threads_per_window()).max(most);
        // Segment sums and weights (2 × segs) live beside the bucket sums; each pair round's
        // output is half its input (at most segs more in all while the previous round's lives).
        // A two-pass sort's records (8 bytes a digit of one launch's windows) and bin counters.
        let sort = if self.two_pass_sort() {
            8 * self.sort_group() as u64 * self.stride() + 4 * SORT_BINS as u64 * w
        } else {
            0
        };
        4 * w * self.stride()
            + 3 * 4 * slots
            + 2 * 4 * w * self.tiles() as u64
            + sort
            + xyzz * (slots + threads + 3 * segs)
    }

    /// Accumulation threads of this plan (all windows).
    pub fn accumulation_threads(&self) -> u64 {
        self.windows as u64 * self.threads_per_window()
    }
}

/// One launch (or a few always queued together) of an MSM, in the order `MsmPlan::steps` lists
/// them: what `msm_windows_queued` queues, and what the host emulation of the kernels runs
/// (engine/tests/cuda_math_on_host.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsmStep {
    /// `msm_histogram` over the windows [w0, w1).
    Histogram { w0: u32, w1: u32 },
    /// The bucket offsets: `msm_tile_sums`, `msm_scan`, `msm_tile_scan`.
    Offsets,
    /// `msm_scatter` over [w0, w1).
    Scatter { w0: u32, w1: u32 },
    /// `msm_scatter_coarse`, then `msm_scatter_fine`, over [w0, w1) (records for `group` windows).
    ScatterTwoPass { w0: u32, w1: u32, group: u32 },
    /// The accumulation kernel (`accumulate_kernel`).
    Accumulate,
    /// Round `round` of `msm_fold_heads`.
    FoldHeads { round: u32 },
    /// `msm_fixup`, after the head partials were folded in a tree or not.
    Fixup { folded: bool },
    /// `msm_bucket_reduce`.
    BucketReduce,
    /// A round of `msm_reduce_pairs` over `m` terms a window.
    PairRound { m: u32 },
}

impl MsmStep {
    /// The phase it belongs to (`CUZK_MSM_PROFILE`).
    pub fn phase(&self) -> &'static str {
        match self {
            MsmStep::Histogram { .. } => "histogram",
            MsmStep::Offsets | MsmStep::Scatter { .. } | MsmStep::ScatterTwoPass { .. } => {
                "scan+scatter"
            }
            MsmStep::Accumulate => "accumulate",
            MsmStep::FoldHeads { .. } | MsmStep::Fixup { .. } => "fixup",
            MsmStep::BucketReduce => "bucket reduce",
            MsmStep::PairRound { .. } => "pair rounds",
        }
    }
}

impl MsmPlan {
    /// The MSM's launches as the device runs them: the sort in `sort_group` windows a launch, in
    /// two passes if `two_pass_sort`, the head partials folded unless `CUZK_MSM_HEAD_TREE=0`.
    pub fn steps(&self) -> Vec<MsmStep> {
        self.steps_with(self.sort_group(), self.two_pass_sort(), fold_heads())
    }

    /// The launches with the sort's window group, its passes and the fold given (the host
    /// emulation takes every combination).
    pub fn steps_with(&self, group: u32, two_pass: bool, fold: bool) -> Vec<MsmStep> {
        let group = group.clamp(1, self.windows);
        let ranges = self.sort_ranges(group);
        let mut v: Vec<MsmStep> = ranges
            .iter()
            .map(|&(w0, w1)| MsmStep::Histogram { w0, w1 })
            .collect();
        v.push(MsmStep::Offsets);
        v.extend(ranges.iter().map(|&(w0, w1)| {
            if two_pass {
                MsmStep::ScatterTwoPass { w0, w1, group }
            } else {
                MsmStep::Scatter { w0, w1 }
            }
        }));
        v.push(MsmStep::Accumulate);
        if fold {
            v.extend((0..self.head_rounds()).map(|round| MsmStep::FoldHeads { round }));
        }
        v.push(MsmStep::Fixup { folded: fold });
        v.push(MsmStep::BucketReduce);
        let mut m = self.segments;
        while m > 1 {
            v.push(MsmStep::PairRound { m });
            m = m.div_ceil(2);
        }
        v
    }
}
