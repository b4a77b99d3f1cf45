//! The fused H step on the device: iNTT → coset NTT → (a·b − c)/Z → coset iNTT.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::device::{grid, GpuDevice};
use super::ntt::ntt_in_place;
use super::buf::DevBuf;
use super::{as_bytes, backend_err, Result};
use crate::gpu_launch;

/// Bits of the index covered by the low power table; the high table covers the rest.
const LO_BITS: u32 = 12;

/// Two tables with lo[i] · hi[j] = f · g^(i + j·2^lo_bits), covering every exponent < 2^log_n.
pub struct PowerTables {
    pub lo: DevBuf,
    pub hi: DevBuf,
    pub lo_bits: u32,
}

impl PowerTables {
    pub fn new(dev: &GpuDevice, g: Scalar, f: Scalar, log_n: u32) -> Result<Self> {
        let lo_bits = LO_BITS.min(log_n);
        let lo_len = 1usize << lo_bits;
        let hi_len = 1usize << (log_n - lo_bits);
        let mut lo = Vec::with_capacity(lo_len);
        let mut p = Scalar::ONE;
        for _ in 0..lo_len {
            lo.push(p);
            p *= g;
        }
        let step = p; // g^(2^lo_bits)
        let mut hi = Vec::with_capacity(hi_len);
        let mut q = f;
        for _ in 0..hi_len {
            hi.push(q);
            q *= step;
        }
        let lo = dev.upload(as_bytes(&lo), "coset power table")?;
        let hi = dev.upload(as_bytes(&hi), "coset power table")?;
        Ok(PowerTables { lo, hi, lo_bits })
    }
}

/// out[k or p] = input[p] · table(k), k = bitrev(p) if rev_in; see `scale_permute` in
/// cuda-src/h.cu. `out` and `input` are device addresses of 2^log_n Fr elements; they may be
/// equal only when `out_perm` is false.
pub fn scale_permute(dev: &GpuDevice, out: u64, input: u64, t: &PowerTables, log_n: u32, rev_in: bool, out_perm: bool) -> Result<()> {
    if out == input && out_perm {
        return Err(backend_err("scale_permute with a permuted output cannot run in place"));
    }
    let (r, o) = (u32::from(rev_in), u32::from(out_perm));
    let n = 1u64 << log_n;
    gpu_launch!(dev, "scale_permute", grid(n, 256), &out, &input, &t.lo.ptr(), &t.hi.ptr(), &t.lo_bits, &log_n, &r, &o)
}

/// Everything compute_h needs for one domain size, built once and reused.
pub struct HDomain {
    pub log_n: u32,
    pub tw: DevBuf,
    /// n^-1 · g^k: after the inverse DIF, coefficients to coset form.
    pub to_coset: PowerTables,
    /// n^-1 · g^-k: after the final inverse DIF, coset back to plain coefficients.
    pub from_coset: PowerTables,
    pub zinv: DevBuf,
}

impl HDomain {
    pub fn new(dev: &GpuDevice, log_n: u32) -> Result<Self> {
        let tw = super::ntt::twiddles(dev, log_n)?;
        let n = Scalar::from(1u64 << log_n);
        let n_inv = Option::<Scalar>::from(n.invert()).ok_or_else(|| backend_err("1/n does not exist"))?;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = Option::<Scalar>::from(g.invert()).ok_or_else(|| backend_err("1/g does not exist"))?;
        let to_coset = PowerTables::new(dev, g, n_inv, log_n)?;
        let from_coset = PowerTables::new(dev, g_inv, n_inv, log_n)?;
        let z = g.pow_vartime([1u64 << log_n]) - Scalar::ONE;
        let zinv = Option::<Scalar>::from(z.invert()).ok_or_else(|| backend_err("Z on the coset is zero"))?;
        let zinv = dev.upload(as_bytes(&[zinv]), "1/Z")?;
        Ok(HDomain { log_n, tw, to_coset, from_coset, zinv })
    }
}

/// Computes H on the device. `a`, `b`, `c` are device addresses of 2^log_n evaluations each; on
/// return `b` holds H's coefficients in natural order (`a` and `c` are scratch).
pub fn compute_h_device(dev: &GpuDevice, d: &HDomain, a: u64, b: u64, c: u64) -> Result<()> {
    let log_n = d.log_n;
    for x in [a, b, c] {
        ntt_in_place(dev, x, &d.tw, log_n, true, true)?; // natural -> bit-reversed coefficients · n
        scale_permute(dev, x, x, &d.to_coset, log_n, true, false)?; // · g^k / n, stays bit-reversed
        ntt_in_place(dev, x, &d.tw, log_n, false, false)?; // bit-reversed -> natural coset evaluations
    }
    let n = 1u64 << log_n;
    gpu_launch!(dev, "h_quotient", grid(n, 256), &a, &b, &c, &d.zinv.ptr(), &n)?;
    ntt_in_place(dev, a, &d.tw, log_n, true, true)?;
    scale_permute(dev, b, a, &d.from_coset, log_n, true, true)
}
