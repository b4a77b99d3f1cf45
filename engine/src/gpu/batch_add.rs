//! Batch addition on the device: the sum of the bases selected by a bitmap.

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::fold::fold;
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::{backend_err, Result};
use crate::gpu_launch;

/// Threads per SM the batch-addition launch aims for.
const THREADS_PER_SM: u64 = 512;

/// Sum of `bases[i]` (device) for every set bit `i < n` of `bits` (device, u64 words); returns
/// the XYZZ bytes of the sum.
pub fn batch_add_raw(
    dev: &GpuDevice,
    curve: Curve,
    bases: &DevBuf,
    bits: &DevBuf,
    n: u64,
) -> Result<Vec<u8>> {
    read_sum(dev, &batch_add_queued(dev, curve, bases, bits, n)?, curve)
}

/// The XYZZ bytes of a queued batch addition's sum (waits for the stream).
pub fn read_sum(dev: &GpuDevice, sum: &DevBuf, curve: Curve) -> Result<Vec<u8>> {
    let mut out = vec![0u8; curve.xyzz_bytes()];
    dev.download(sum, 0, &mut out, "batch-addition sum")?;
    Ok(out)
}

/// Queues the batch addition (no synchronisation); the returned buffer holds the XYZZ sum once
/// the stream has run it.
pub fn batch_add_queued(
    dev: &GpuDevice,
    curve: Curve,
    bases: &DevBuf,
    bits: &DevBuf,
    n: u64,
) -> Result<DevBuf> {
    let nwords = n.div_ceil(64);
    if (bases.len() as u64) < n * curve.affine_bytes() as u64 || (bits.len() as u64) < nwords * 8 {
        return Err(backend_err(format!(
            "batch addition over {n} points: buffers of {} / {} bytes are too small",
            bases.len(),
            bits.len()
        )));
    }
    batch_add_at(dev, curve, bases.ptr(), bits.ptr(), n)
}

/// Queues the batch addition of `n` bases at device address `bases` selected by the bitmap words
/// at `bits` (a chunk of larger buffers: the streamed tier; `bits` then starts at the chunk's
/// first word, so chunks start at multiples of 64 points). The caller checked the lengths.
pub fn batch_add_at(
    dev: &GpuDevice,
    curve: Curve,
    bases: u64,
    bits: u64,
    n: u64,
) -> Result<DevBuf> {
    let nwords = n.div_ceil(64);
    let target = (dev.sm_count as u64 * THREADS_PER_SM).max(1);
    let wpt = nwords.div_ceil(target).max(1);
    let threads = nwords.div_ceil(wpt);
    let partials = dev.alloc(
        threads as usize * curve.xyzz_bytes(),
        "batch-addition partial sums",
    )?;
    gpu_launch!(
        dev,
        &curve.kernel("batch_add"),
        grid(threads, 128),
        &bases,
        &bits,
        &partials.ptr(),
        &n,
        &wpt
    )?;
    fold(dev, curve, partials, 1, threads)
}

pub fn batch_add_g1_device(
    dev: &GpuDevice,
    bases: &DevBuf,
    bits: &DevBuf,
    n: u64,
) -> Result<G1Projective> {
    if n == 0 {
        return Ok(G1Projective::identity());
    }
    Ok(g1_from_xyzz(&batch_add_raw(
        dev,
        Curve::G1,
        bases,
        bits,
        n,
    )?))
}

pub fn batch_add_g2_device(
    dev: &GpuDevice,
    bases: &DevBuf,
    bits: &DevBuf,
    n: u64,
) -> Result<G2Projective> {
    if n == 0 {
        return Ok(G2Projective::identity());
    }
    Ok(g2_from_xyzz(&batch_add_raw(
        dev,
        Curve::G2,
        bases,
        bits,
        n,
    )?))
}
