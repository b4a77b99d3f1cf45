//! Pippenger MSM on the device (see cuda-src/msm.cu for the kernel steps); the windows are
//! combined on the host.
//!
//! [`MsmPlan`] is the one plan of an MSM: the window size from a cost model fitted to measured
//! phase times ([`window_bits`]; [`MsmPlan::sparse`] a narrower one for scalars of which at most
//! `live` are nonzero, the witness tails, never with more scratch than the dense plan), each
//! window's nonzero digits in equal shares over the accumulation threads (on a device, whole
//! waves of the accumulation kernel's resident threads: [`MsmPlan::on`]),
//! [`MsmPlan::scratch_bytes`] (what the VRAM budget reserves) and [`MsmPlan::steps`] (the
//! launches in order): the sort in window groups whose counters fit in L2 (in two passes, coarse
//! bins then buckets, where a group's bucket-run tails would not), the accumulation (G1 in
//! lockstep blocks whose warps share the instruction cache), a bucket's partials from later
//! shares summed in a tree before the fix-up, the buckets reduced in segments and the segments
//! in pair rounds to one sum per window. [`QueuedMsm`] is an MSM queued on a stream, its window
//! sums read once the stream is past it.

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::{backend_err, Result};
use crate::gpu_launch;

pub use super::msm_plan::*;

/// Runs the MSM over `n` bases and scalars already on the device; returns each window's sum as
/// XYZZ bytes (window 0 first).
pub fn msm_windows(dev: &GpuDevice, bases: u64, scalars: u64, plan: &MsmPlan) -> Result<Vec<u8>> {
    QueuedMsm {
        windows: msm_windows_queued(dev, bases, scalars, plan)?,
        plan: *plan,
    }
    .raw(dev)
}

/// An MSM whose kernels are queued on a device's stream; its window sums are read once the
/// stream is past it.
pub struct QueuedMsm {
    windows: DevBuf,
    plan: MsmPlan,
}

impl QueuedMsm {
    /// Queues the MSM (no synchronisation): `bases`, `scalars` must stay alive until the stream
    /// has run it.
    pub fn queue(
        dev: &GpuDevice,
        curve: Curve,
        bases: &DevBuf,
        scalars: &DevBuf,
        n: u64,
    ) -> Result<Option<Self>> {
        Self::queue_sparse(dev, curve, bases, scalars, n, n)
    }

    /// Queues the MSM of `n` scalars of which at most `live` are nonzero
    /// ([`MsmPlan::on_sparse`]); None for no points, or none nonzero (the sum is the identity).
    pub fn queue_sparse(
        dev: &GpuDevice,
        curve: Curve,
        bases: &DevBuf,
        scalars: &DevBuf,
        n: u64,
        live: u64,
    ) -> Result<Option<Self>> {
        if live == 0 {
            check_len(bases, scalars, n, curve)?;
            return Ok(None);
        }
        Self::with_plan(
            dev,
            bases,
            scalars,
            &MsmPlan::on_sparse(dev, n, live, curve),
        )
    }

    /// Queues the MSM of `plan.n` points under an explicit plan; None for no points.
    pub fn with_plan(
        dev: &GpuDevice,
        bases: &DevBuf,
        scalars: &DevBuf,
        plan: &MsmPlan,
    ) -> Result<Option<Self>> {
        check_len(bases, scalars, plan.n, plan.curve)?;
        if plan.n == 0 {
            return Ok(None);
        }
        Ok(Some(QueuedMsm {
            windows: msm_windows_queued(dev, bases.ptr(), scalars.ptr(), plan)?,
            plan: *plan,
        }))
    }

    /// Queues the MSM of `plan.n` points whose bases and scalars start at device addresses
    /// `bases` and `scalars` (a chunk of larger buffers: the streamed tier); None for no points.
    /// The caller keeps both ranges alive and unwritten until the stream has run it.
    pub fn at(dev: &GpuDevice, bases: u64, scalars: u64, plan: &MsmPlan) -> Result<Option<Self>> {
        if plan.n == 0 || plan.live == 0 {
            return Ok(None);
        }
        Ok(Some(QueuedMsm {
            windows: msm_windows_queued(dev, bases, scalars, plan)?,
            plan: *plan,
        }))
    }

    fn raw(&self, dev: &GpuDevice) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.plan.windows as usize * self.plan.curve.xyzz_bytes()];
        dev.download(&self.windows, 0, &mut out, "MSM window sums")?;
        Ok(out)
    }
    pub fn g1(q: Option<Self>, dev: &GpuDevice) -> Result<G1Projective> {
        let Some(q) = q else {
            return Ok(G1Projective::identity());
        };
        Ok(combine(
            q.raw(dev)?
                .chunks_exact(Curve::G1.xyzz_bytes())
                .map(g1_from_xyzz)
                .collect(),
            q.plan.c,
        ))
    }
    pub fn g2(q: Option<Self>, dev: &GpuDevice) -> Result<G2Projective> {
        let Some(q) = q else {
            return Ok(G2Projective::identity());
        };
        Ok(combine(
            q.raw(dev)?
                .chunks_exact(Curve::G2.xyzz_bytes())
                .map(g2_from_xyzz)
                .collect(),
            q.plan.c,
        ))
    }
}

/// Queues the MSM's kernels; the returned buffer holds the window sums (XYZZ, window 0 first)
/// once the stream has run them.
pub fn msm_windows_queued(
    dev: &GpuDevice,
    bases: u64,
    scalars: u64,
    plan: &MsmPlan,
) -> Result<DevBuf> {
    let MsmPlan {
        n,
        curve,
        c,
        windows,
        buckets,
        segments,
        per_thread,
        ..
    } = *plan;
    let stride = plan.stride();
    let slots = windows as u64 * buckets as u64;
    let (tile, tiles) = (plan.tile(), plan.tiles());
    let threads = windows as u64 * plan.threads_per_window();
    let counts = dev.alloc_zeroed(slots as usize * 4, "MSM bucket counts")?;
    let offsets = dev.alloc(slots as usize * 4, "MSM bucket offsets")?;
    let cursor = dev.alloc(slots as usize * 4, "MSM bucket cursors")?;
    let tile_sums = dev.alloc((windows * tiles) as usize * 4, "MSM tile sums")?;
    let tile_offsets = dev.alloc((windows * tiles) as usize * 4, "MSM tile offsets")?;
    let sorted = dev.alloc((stride * windows as u64 * 4) as usize, "MSM sorted indices")?;
    let bucket_sums = dev.alloc_zeroed(slots as usize * curve.xyzz_bytes(), "MSM bucket sums")?;
    let partials = dev.alloc(
        threads as usize * curve.xyzz_bytes(),
        "MSM partial bucket sums",
    )?;
    let seg_a = dev.alloc(
        (windows * segments) as usize * curve.xyzz_bytes(),
        "MSM segment sums",
    )?;
    let seg_q = if segments > 1 {
        Some(dev.alloc(
            (windows * segments) as usize * curve.xyzz_bytes(),
            "MSM segment weights",
        )?)
    } else {
        None
    };

    let prof = Profiler::new(dev);
    let steps = plan.steps();
    let (mut seg_a, mut seg_q) = (seg_a, seg_q);
    let mut sort: Option<(DevBuf, DevBuf)> = None; // a two-pass sort's bin counters and records
    for (k, step) in steps.iter().enumerate() {
        match *step {
            MsmStep::Histogram { w0, w1 } => {
                gpu_launch!(
                    dev,
                    "msm_histogram",
                    grid(n, 256),
                    &scalars,
                    &counts.ptr(),
                    &n,
                    &c,
                    &w0,
                    &w1
                )?;
            }
            MsmStep::Offsets => {
                let tiled = cudarc::driver::LaunchConfig {
                    grid_dim: (tiles, windows, 1),
                    block_dim: (tile, 1, 1),
                    shared_mem_bytes: 0,
                };
                gpu_launch!(
                    dev,
                    "msm_tile_sums",
                    tiled,
                    &counts.ptr(),
                    &tile_sums.ptr(),
                    &buckets
                )?;
                let scan_cfg = cudarc::driver::LaunchConfig {
                    grid_dim: (windows, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                };
                gpu_launch!(
                    dev,
                    "msm_scan",
                    scan_cfg,
                    &tile_sums.ptr(),
                    &tile_offsets.ptr(),
                    &0u64,
                    &tiles
                )?;
                gpu_launch!(
                    dev,
                    "msm_tile_scan",
                    tiled,
                    &counts.ptr(),
                    &tile_offsets.ptr(),
                    &offsets.ptr(),
                    &cursor.ptr(),
                    &buckets
                )?;
            }
            MsmStep::Scatter { w0, w1 } => {
                gpu_launch!(
                    dev,
                    "msm_scatter",
                    grid(n, 256),
                    &scalars,
                    &cursor.ptr(),
                    &sorted.ptr(),
                    &n,
                    &stride,
                    &c,
                    &w0,
                    &w1
                )?;
            }
            MsmStep::ScatterTwoPass { w0, w1, group } => {
                if sort.is_none() {
                    sort = Some((
                        dev.alloc_zeroed(
                            (windows * SORT_BINS) as usize * 4,
                            "MSM sort bin counters",
                        )?,
                        dev.alloc((group as u64 * stride * 8) as usize, "MSM sort records")?,
                    ));
                }
                let (bin_fill, records) = sort.as_ref().expect("allocated above");
                let bin_bits = plan.sort_bin_bits();
                gpu_launch!(
                    dev,
                    "msm_scatter_coarse",
                    grid(n, 256),
                    &scalars,
                    &offsets.ptr(),
                    &bin_fill.ptr(),
                    &records.ptr(),
                    &n,
                    &stride,
                    &c,
                    &w0,
                    &w1,
                    &bin_bits
                )?;
                gpu_launch!(
                    dev,
                    "msm_scatter_fine",
                    grid((w1 - w0) as u64 * stride, 256),
                    &records.ptr(),
                    &offsets.ptr(),
                    &counts.ptr(),
                    &cursor.ptr(),
                    &sorted.ptr(),
                    &stride,
                    &w0,
                    &w1,
                    &buckets
                )?;
            }
            MsmStep::Accumulate => {
                sort = None;
                let (acc_kernel, acc_block) = accumulate_kernel(dev, curve);
                gpu_launch!(
                    dev,
                    acc_kernel,
                    grid(threads, acc_block),
                    &bases,
                    &sorted.ptr(),
                    &offsets.ptr(),
                    &counts.ptr(),
                    &bucket_sums.ptr(),
                    &partials.ptr(),
                    &stride,
                    &windows,
                    &buckets,
                    &per_thread
                )?;
            }
            MsmStep::FoldHeads { round } => {
                gpu_launch!(
                    dev,
                    &curve.kernel("msm_fold_heads"),
                    grid(threads, 128),
                    &offsets.ptr(),
                    &counts.ptr(),
                    &partials.ptr(),
                    &stride,
                    &windows,
                    &buckets,
                    &per_thread,
                    &round
                )?;
            }
            MsmStep::Fixup { folded } => {
                let folded = u32::from(folded);
                gpu_launch!(
                    dev,
                    &curve.kernel("msm_fixup"),
                    grid(threads, 128),
                    &offsets.ptr(),
                    &counts.ptr(),
                    &bucket_sums.ptr(),
                    &partials.ptr(),
                    &stride,
                    &windows,
                    &buckets,
                    &per_thread,
                    &folded
                )?;
            }
            MsmStep::BucketReduce => {
                let q_ptr = seg_q.as_ref().map_or(0, |q| q.ptr());
                gpu_launch!(
                    dev,
                    &curve.kernel("msm_bucket_reduce"),
                    grid(windows as u64 * segments as u64, 128),
                    &bucket_sums.ptr(),
                    &seg_a.ptr(),
                    &q_ptr,
                    &windows,
                    &buckets,
                    &segments
                )?;
            }
            MsmStep::PairRound { m } => {
                (seg_a, seg_q) = reduce_pair_round(dev, curve, seg_a, seg_q, windows, m)?
            }
        }
        if steps
            .get(k + 1)
            .is_none_or(|next| next.phase() != step.phase())
        {
            prof.mark(step.phase())?;
        }
    }
    drop((
        cursor,
        tile_sums,
        tile_offsets,
        sorted,
        partials,
        offsets,
        counts,
        bucket_sums,
    ));
    Ok(seg_a)
}

/// One round of `msm_reduce_pairs` (cuda-src/msm.cu, step 6): `m` terms (A, Q) per window
/// become ceil(m / 2); after the last round A is the window's sum (and there is no Q).
fn reduce_pair_round(
    dev: &GpuDevice,
    curve: Curve,
    a: DevBuf,
    q: Option<DevBuf>,
    windows: u32,
    m: u32,
) -> Result<(DevBuf, Option<DevBuf>)> {
    let Some(q_in) = q else {
        return Err(backend_err("MSM pair rounds without segment weights"));
    };
    let mo = m.div_ceil(2);
    let terms = windows as usize * mo as usize;
    let a_out = dev.alloc(terms * curve.xyzz_bytes(), "MSM pair round sums")?;
    let q_out = if mo > 1 {
        Some(dev.alloc(terms * curve.xyzz_bytes(), "MSM pair round weights")?)
    } else {
        None
    };
    let q_out_ptr = q_out.as_ref().map_or(0, |b| b.ptr());
    gpu_launch!(
        dev,
        &curve.kernel("msm_reduce_pairs"),
        grid(terms as u64, 128),
        &a.ptr(),
        &q_in.ptr(),
        &a_out.ptr(),
        &q_out_ptr,
        &windows,
        &m
    )?;
    Ok((a_out, q_out))
}

/// Σ_w 2^(c·w) · W_w, by Horner from the top window.
fn combine<G: Group>(windows: Vec<G>, c: u32) -> G {
    let mut acc = G::identity();
    for w in windows.into_iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += w;
    }
    acc
}

fn check_len(bases: &DevBuf, scalars: &DevBuf, n: u64, curve: Curve) -> Result<()> {
    if (bases.len() as u64) < n * curve.affine_bytes() as u64 || (scalars.len() as u64) < n * 32 {
        return Err(backend_err(format!(
            "MSM over {n} points: buffers of {} / {} bytes are too small",
            bases.len(),
            scalars.len()
        )));
    }
    Ok(())
}

pub fn msm_g1_device(
    dev: &GpuDevice,
    bases: &DevBuf,
    scalars: &DevBuf,
    n: u64,
) -> Result<G1Projective> {
    msm_g1_with_plan(dev, bases, scalars, &MsmPlan::on(dev, n, Curve::G1))
}

pub fn msm_g2_device(
    dev: &GpuDevice,
    bases: &DevBuf,
    scalars: &DevBuf,
    n: u64,
) -> Result<G2Projective> {
    msm_g2_with_plan(dev, bases, scalars, &MsmPlan::on(dev, n, Curve::G2))
}

/// The G1 MSM under an explicit plan (window size, share per thread); `plan.n` points.
pub fn msm_g1_with_plan(
    dev: &GpuDevice,
    bases: &DevBuf,
    scalars: &DevBuf,
    plan: &MsmPlan,
) -> Result<G1Projective> {
    QueuedMsm::g1(
        QueuedMsm::with_plan(
            dev,
            bases,
            scalars,
            &MsmPlan {
                curve: Curve::G1,
                ..*plan
            },
        )?,
        dev,
    )
}

/// The G2 MSM under an explicit plan.
pub fn msm_g2_with_plan(
    dev: &GpuDevice,
    bases: &DevBuf,
    scalars: &DevBuf,
    plan: &MsmPlan,
) -> Result<G2Projective> {
    QueuedMsm::g2(
        QueuedMsm::with_plan(
            dev,
            bases,
            scalars,
            &MsmPlan {
                curve: Curve::G2,
                ..*plan
            },
        )?,
        dev,
    )
}

/// Per-phase wall times of one MSM, logged (`log` facade, info, target
/// `cuzk_engine::gpu::msm::profile`) when `CUZK_MSM_PROFILE` is set (each mark synchronises the
/// stream, so profiling slows the MSM slightly).
struct Profiler<'a> {
    dev: &'a GpuDevice,
    last: Option<std::time::Instant>,
}

impl<'a> Profiler<'a> {
    fn new(dev: &'a GpuDevice) -> Self {
        let on = std::env::var_os("CUZK_MSM_PROFILE").is_some();
        Profiler {
            dev,
            last: on.then(std::time::Instant::now),
        }
    }
    fn mark(&self, phase: &str) -> Result<()> {
        if let Some(t) = self.last {
            self.dev.sync(phase)?;
            log::info!(
                target: "cuzk_engine::gpu::msm::profile",
                "msm phase {phase:<18} ends at {:8.2} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        Ok(())
    }
}
