//! Pippenger MSM on the device (see cuda-src/msm.cu for the kernel steps); the windows are
//! combined on the host.

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::fold::fold;
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::{backend_err, Result};
use crate::gpu_launch;

/// Scalar bits covered by the windows (255-bit scalars plus the signed-digit carry).
const SCALAR_BITS: u32 = 256;

/// Window size `c` minimising windows × (points + buckets), with c ≤ 16 (15-bit bucket index).
pub fn window_bits(n: u64) -> u32 {
    (4..=16u32)
        .min_by_key(|&c| SCALAR_BITS.div_ceil(c) as u64 * (n + (1u64 << c)))
        .unwrap_or(16)
}

/// Everything about one MSM's plan.
#[derive(Clone, Copy, Debug)]
pub struct MsmPlan {
    pub n: u64,
    pub c: u32,
    pub windows: u32,
    pub buckets: u32,
    pub segments: u32,
}

impl MsmPlan {
    pub fn new(n: u64) -> Self {
        let c = window_bits(n);
        let buckets = 1u32 << (c - 1);
        MsmPlan { n, c, windows: SCALAR_BITS.div_ceil(c), buckets, segments: buckets.min(1024) }
    }
}

/// Runs the MSM over `n` bases and scalars already on the device; returns each window's sum as
/// XYZZ bytes (window 0 first).
pub fn msm_windows(dev: &GpuDevice, curve: Curve, bases: u64, scalars: u64, plan: &MsmPlan) -> Result<Vec<u8>> {
    let MsmPlan { n, c, windows, buckets, segments } = *plan;
    let slots = windows as u64 * buckets as u64;
    let digits = dev.alloc((n * windows as u64 * 4) as usize, "MSM digits")?;
    let counts = dev.alloc_zeroed(slots as usize * 4, "MSM bucket counts")?;
    let offsets = dev.alloc(slots as usize * 4, "MSM bucket offsets")?;
    let cursor = dev.alloc(slots as usize * 4, "MSM bucket cursors")?;
    let sorted = dev.alloc((n * windows as u64 * 4) as usize, "MSM sorted indices")?;
    let bucket_sums = dev.alloc(slots as usize * curve.xyzz_bytes(), "MSM bucket sums")?;
    let seg = dev.alloc((windows * segments) as usize * curve.xyzz_bytes(), "MSM segment sums")?;

    let prof = Profiler::new(dev);
    gpu_launch!(dev, "msm_digits", grid(n, 256), &scalars, &digits.ptr(), &counts.ptr(), &n, &c, &windows)?;
    let scan_cfg = cudarc::driver::LaunchConfig { grid_dim: (windows, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    prof.mark("digits+histogram")?;
    gpu_launch!(dev, "msm_scan", scan_cfg, &counts.ptr(), &offsets.ptr(), &cursor.ptr(), &buckets)?;
    gpu_launch!(dev, "msm_scatter", grid(n * windows as u64, 256), &digits.ptr(), &cursor.ptr(), &sorted.ptr(), &n, &windows, &buckets)?;
    prof.mark("scan+scatter")?;
    drop(digits);
    gpu_launch!(dev, &curve.kernel("msm_accumulate"), grid(slots, 128), &bases, &sorted.ptr(), &offsets.ptr(), &counts.ptr(),
                &bucket_sums.ptr(), &n, &windows, &buckets)?;
    prof.mark("accumulate")?;
    gpu_launch!(dev, &curve.kernel("msm_bucket_reduce"), grid(windows as u64 * segments as u64, 128), &bucket_sums.ptr(), &seg.ptr(),
                &windows, &buckets, &segments)?;
    prof.mark("bucket reduce")?;
    let folded = fold(dev, curve, seg, windows as u64, segments as u64)?;
    let mut out = vec![0u8; windows as usize * curve.xyzz_bytes()];
    dev.download(&folded, 0, &mut out, "MSM window sums")?;
    prof.mark("fold+download")?;
    Ok(out)
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
        return Err(backend_err(format!("MSM over {n} points: buffers of {} / {} bytes are too small", bases.len(), scalars.len())));
    }
    Ok(())
}

pub fn msm_g1_device(dev: &GpuDevice, bases: &DevBuf, scalars: &DevBuf, n: u64) -> Result<G1Projective> {
    if n == 0 {
        return Ok(G1Projective::identity());
    }
    check_len(bases, scalars, n, Curve::G1)?;
    let plan = MsmPlan::new(n);
    let raw = msm_windows(dev, Curve::G1, bases.ptr(), scalars.ptr(), &plan)?;
    let w = raw.chunks_exact(Curve::G1.xyzz_bytes()).map(g1_from_xyzz).collect();
    Ok(combine(w, plan.c))
}

pub fn msm_g2_device(dev: &GpuDevice, bases: &DevBuf, scalars: &DevBuf, n: u64) -> Result<G2Projective> {
    if n == 0 {
        return Ok(G2Projective::identity());
    }
    check_len(bases, scalars, n, Curve::G2)?;
    let plan = MsmPlan::new(n);
    let raw = msm_windows(dev, Curve::G2, bases.ptr(), scalars.ptr(), &plan)?;
    let w = raw.chunks_exact(Curve::G2.xyzz_bytes()).map(g2_from_xyzz).collect();
    Ok(combine(w, plan.c))
}

/// Per-phase wall times of one MSM, printed to stderr when `CUZK_MSM_PROFILE` is set (each mark
/// synchronises the stream, so profiling slows the MSM slightly).
struct Profiler<'a> {
    dev: &'a GpuDevice,
    last: Option<std::time::Instant>,
}

impl<'a> Profiler<'a> {
    fn new(dev: &'a GpuDevice) -> Self {
        let on = std::env::var_os("CUZK_MSM_PROFILE").is_some();
        Profiler { dev, last: on.then(std::time::Instant::now) }
    }
    fn mark(&self, phase: &str) -> Result<()> {
        if let Some(t) = self.last {
            self.dev.sync(phase)?;
            eprintln!("msm phase {phase:<18} ends at {:8.2} ms", t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(())
    }
}
