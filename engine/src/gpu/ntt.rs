//! NTT over Fr on the device: twiddle tables per domain and the sequence of shared-memory passes.

use blstrs::Scalar;
use cudarc::driver::LaunchConfig;
use ff::{Field, PrimeField};

use super::device::{grid, GpuDevice};
use super::buf::DevBuf;
use super::{as_bytes, backend_err, Result};
use crate::gpu_launch;

/// Largest number of stages one pass runs in shared memory (2^9 elements, times 2 low indices).
const MAX_PASS_BITS: u32 = 9;

/// The primitive 2^log_n-th root of unity bellperson uses: ROOT_OF_UNITY squared (S - log_n) times.
pub fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

/// The twiddle table w^j, j < max(n/2, 1), of the domain 2^log_n, built on the device.
pub fn twiddles(dev: &GpuDevice, log_n: u32) -> Result<DevBuf> {
    if log_n > Scalar::S {
        return Err(backend_err(format!("NTT domain 2^{log_n} exceeds Fr's 2-adicity {}", Scalar::S)));
    }
    let count: u64 = if log_n == 0 { 1 } else { 1u64 << (log_n - 1) };
    let w = omega(log_n);
    let mut pows = Vec::with_capacity(40);
    let mut p = w;
    for _ in 0..40 {
        pows.push(p);
        p = p.square();
    }
    let pows_d = dev.upload(as_bytes(&pows), "NTT root powers")?;
    let tw = dev.alloc(count as usize * 32, "NTT twiddles")?;
    gpu_launch!(dev, "ntt_twiddles", grid(count, 256), &tw.ptr(), &pows_d.ptr(), &count)?;
    Ok(tw)
}

/// The pass plan: `(b, t)` bit ranges in execution order for DIF (top down) or DIT (bottom up).
fn plan(log_n: u32, dif: bool) -> Vec<(u32, u32)> {
    if log_n == 0 {
        return vec![];
    }
    let passes = log_n.div_ceil(MAX_PASS_BITS);
    let mut ranges = Vec::new();
    let mut b = 0;
    for i in 0..passes {
        let t = log_n / passes + u32::from(i < log_n % passes);
        ranges.push((b, t));
        b += t;
    }
    if dif {
        ranges.reverse();
    }
    ranges
}

/// In-place radix-2 transform of `data` (2^log_n Fr elements). DIF: natural order in, bit-reversed
/// out; DIT: bit-reversed in, natural out. `inverse` uses w^-1 and does not scale by 1/n.
/// `data` is the device address of 2^log_n Fr elements.
pub fn ntt_in_place(dev: &GpuDevice, data: u64, tw: &DevBuf, log_n: u32, dif: bool, inverse: bool) -> Result<()> {
    if tw.len() < (16usize << log_n).max(32) {
        return Err(backend_err(format!("NTT twiddle table of {} bytes is too small for 2^{log_n}", tw.len())));
    }
    for (b, t) in plan(log_n, dif) {
        let lg_l: u32 = if b >= 1 { 1 } else { 0 };
        let elems = (1u64 << t) << lg_l;
        let blocks = (1u64 << log_n) / elems;
        let threads = (elems / 2).min(512) as u32;
        let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: (elems * 32) as u32 };
        let (dif_u, inv_u) = (u32::from(dif), u32::from(inverse));
        gpu_launch!(dev, "ntt_pass", cfg, &data, &tw.ptr(), &log_n, &b, &t, &lg_l, &dif_u, &inv_u)?;
    }
    Ok(())
}

/// Natural-order transform: DIF in place on `data` (destroyed), then the bit-reversal copy into
/// `out`. `inverse` uses w^-1 and does not scale by 1/n. Both are device addresses of 2^log_n Fr.
pub fn ntt_natural(dev: &GpuDevice, data: u64, out: u64, tw: &DevBuf, log_n: u32, inverse: bool) -> Result<()> {
    ntt_in_place(dev, data, tw, log_n, true, inverse)?;
    let n = 1u64 << log_n;
    gpu_launch!(dev, "bitrev_copy", grid(n, 256), &out, &data, &log_n)
}
