//! The fused H step on the device: a and b iNTT → coset NTT, their product, its coset iNTT, less
//! c's iNTT, over Z (six transforms of 2^log_n, where the textbook order takes c to the coset and
//! back too: seven).

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::ntt::ntt_in_place;
use super::{as_bytes, backend_err, Result};
use crate::gpu_launch;

/// Bits of the index covered by the low power table; the high table covers the rest.
pub const LO_BITS: u32 = 12;

/// Two tables with lo[i] · hi[j] = f · g^(i + j·2^lo_bits), covering every exponent < 2^log_n.
pub struct PowerTables {
    pub lo: DevBuf,
    pub hi: DevBuf,
    pub lo_bits: u32,
}

impl PowerTables {
    pub fn new(dev: &GpuDevice, g: Scalar, f: Scalar, log_n: u32) -> Result<Self> {
        let (lo, hi, lo_bits) = Self::values(g, f, log_n);
        let lo = dev.upload(as_bytes(&lo), "coset power table")?;
        let hi = dev.upload(as_bytes(&hi), "coset power table")?;
        Ok(PowerTables { lo, hi, lo_bits })
    }

    /// The two tables' values (lo, hi, lo_bits), as uploaded by `new`.
    pub fn values(g: Scalar, f: Scalar, log_n: u32) -> (Vec<Scalar>, Vec<Scalar>, u32) {
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
        (lo, hi, lo_bits)
    }
}

/// out[k or p] = input[p] · table(k), k = bitrev(p) if rev_in; see `scale_permute` in
/// cuda-src/h.cu. `out` and `input` are device addresses of 2^log_n Fr elements; they may be
/// equal only when `out_perm` is false.
pub fn scale_permute(
    dev: &GpuDevice,
    out: u64,
    input: u64,
    t: &PowerTables,
    log_n: u32,
    rev_in: bool,
    out_perm: bool,
) -> Result<()> {
    if out == input && out_perm {
        return Err(backend_err(
            "scale_permute with a permuted output cannot run in place",
        ));
    }
    let (r, o) = (u32::from(rev_in), u32::from(out_perm));
    let n = 1u64 << log_n;
    gpu_launch!(
        dev,
        "scale_permute",
        grid(n, 256),
        &out,
        &input,
        &t.lo.ptr(),
        &t.hi.ptr(),
        &t.lo_bits,
        &log_n,
        &r,
        &o
    )
}

/// Everything compute_h needs for one domain size, built once and reused.
pub struct HDomain {
    pub log_n: u32,
    pub tw: DevBuf,
    /// n^-1 · g^k: after the inverse DIF, coefficients to coset form.
    pub to_coset: PowerTables,
    /// g^-k / (n Z(g)): after the final inverse DIF, coset back to plain coefficients, over Z.
    pub from_coset: PowerTables,
    /// 1 / (n Z(g)): c's factor in the last pass (`h_finish`).
    pub kappa: DevBuf,
}

/// (to-coset (g, f), from-coset (g, f), kappa = 1 / (n Z(g))).
pub type HConstants = ((Scalar, Scalar), (Scalar, Scalar), Scalar);

/// The constants of the H step for 2^log_n: (g, f) of the to-coset and from-coset power tables
/// (n^-1 · g^k, and g^-k / (n Z(g)) with Z(g) = g^n − 1, Z's constant value on the coset), and
/// kappa = 1 / (n Z(g)), c's factor in the last pass.
pub fn h_constants(log_n: u32) -> Result<HConstants> {
    let n = Scalar::from(1u64 << log_n);
    let n_inv =
        Option::<Scalar>::from(n.invert()).ok_or_else(|| backend_err("1/n does not exist"))?;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let g_inv =
        Option::<Scalar>::from(g.invert()).ok_or_else(|| backend_err("1/g does not exist"))?;
    let z = g.pow_vartime([1u64 << log_n]) - Scalar::ONE;
    let zinv =
        Option::<Scalar>::from(z.invert()).ok_or_else(|| backend_err("Z on the coset is zero"))?;
    let kappa = n_inv * zinv;
    Ok(((g, n_inv), (g_inv, kappa), kappa))
}

impl HDomain {
    pub fn new(dev: &GpuDevice, log_n: u32) -> Result<Self> {
        let tw = super::ntt::twiddles(dev, log_n)?;
        let ((g, f), (g_inv, f_inv), kappa) = h_constants(log_n)?;
        let to_coset = PowerTables::new(dev, g, f, log_n)?;
        let from_coset = PowerTables::new(dev, g_inv, f_inv, log_n)?;
        let kappa = dev.upload(as_bytes(&[kappa]), "1/(n Z)")?;
        Ok(HDomain {
            log_n,
            tw,
            to_coset,
            from_coset,
            kappa,
        })
    }
}

/// One of the H step's three buffers (the evaluations of a, b, c on entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HBuf {
    A = 0,
    B = 1,
    C = 2,
}

/// One step of the fused H step, in order ([`h_steps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HStep {
    /// `ntt_in_place` on a buffer.
    Ntt { x: HBuf, dif: bool, inverse: bool },
    /// `scale_permute` by the to-coset (`to_coset`) or the from-coset power tables.
    Scale {
        out: HBuf,
        input: HBuf,
        to_coset: bool,
        rev_in: bool,
        out_perm: bool,
    },
    /// `h_product`: A = A·B.
    Product,
    /// `h_finish`: B = (A scaled by the from-coset tables, less C · kappa), permuted to natural
    /// order.
    Finish,
}

/// The H step. For a and b: inverse DIF (natural → bit-reversed coefficients · n), scale by
/// g^k / n (staying bit-reversed), DIT (→ natural coset evaluations). For c: the inverse DIF
/// only. A = A·B; the inverse DIF of A; then B = A scaled by g^-k / (n Z) less C / (n Z),
/// permuted to natural order: H's coefficients. That is the textbook H (the coset
/// interpolation of (a·b − c)/Z) by linearity, without c's round trip through the coset (see
/// `h_finish` in cuda-src/h.cu). What `compute_h_device` runs, and what the host emulation of
/// the kernels (engine/tests/cuda_math_on_host.rs) runs.
pub fn h_steps() -> Vec<HStep> {
    let mut v = Vec::new();
    for x in [HBuf::A, HBuf::B] {
        v.push(HStep::Ntt {
            x,
            dif: true,
            inverse: true,
        });
        v.push(HStep::Scale {
            out: x,
            input: x,
            to_coset: true,
            rev_in: true,
            out_perm: false,
        });
        v.push(HStep::Ntt {
            x,
            dif: false,
            inverse: false,
        });
    }
    v.push(HStep::Ntt {
        x: HBuf::C,
        dif: true,
        inverse: true,
    });
    v.push(HStep::Product);
    v.push(HStep::Ntt {
        x: HBuf::A,
        dif: true,
        inverse: true,
    });
    v.push(HStep::Finish);
    v
}

/// Computes H on the device. `a`, `b`, `c` are device addresses of 2^log_n evaluations each; on
/// return `b` holds H's coefficients in natural order (`a` and `c` are scratch).
pub fn compute_h_device(dev: &GpuDevice, d: &HDomain, a: u64, b: u64, c: u64) -> Result<()> {
    for step in h_steps() {
        run_step(dev, d, step, [a, b, c], b)?;
    }
    Ok(())
}

/// `h_steps`' steps for one of a and b: to natural coset evaluations (what the products made
/// one at a time run on each as soon as it is made: `streamed_products.rs`).
pub fn to_coset(dev: &GpuDevice, d: &HDomain, x: u64) -> Result<()> {
    for step in h_steps().into_iter().take(3) {
        run_step(dev, d, step, [x, x, x], x)?;
    }
    Ok(())
}

/// `h_steps`' product: `a = a·b` (both on the coset).
pub fn product(dev: &GpuDevice, d: &HDomain, a: u64, b: u64) -> Result<()> {
    run_step(dev, d, HStep::Product, [a, b, 0], 0)
}

/// `h_steps`' last three: `c`'s inverse transform, `a`'s (the coset product), and H's
/// coefficients into `out` (a buffer of its own: `h_finish` permutes).
pub fn finish(dev: &GpuDevice, d: &HDomain, out: u64, a: u64, c: u64) -> Result<()> {
    let tail = h_steps();
    for step in &tail[tail.len() - 4..] {
        if *step == HStep::Product {
            continue;
        }
        run_step(dev, d, *step, [a, 0, c], out)?;
    }
    Ok(())
}

/// One step on buffers `[a, b, c]` (device addresses); `Finish` writes into `out`.
fn run_step(dev: &GpuDevice, d: &HDomain, step: HStep, bufs: [u64; 3], out: u64) -> Result<()> {
    let log_n = d.log_n;
    let n = 1u64 << log_n;
    let ptr = |x: HBuf| bufs[x as usize];
    match step {
        HStep::Ntt { x, dif, inverse } => ntt_in_place(dev, ptr(x), &d.tw, log_n, dif, inverse),
        HStep::Scale {
            out,
            input,
            to_coset,
            rev_in,
            out_perm,
        } => {
            let t = if to_coset { &d.to_coset } else { &d.from_coset };
            scale_permute(dev, ptr(out), ptr(input), t, log_n, rev_in, out_perm)
        }
        HStep::Product => gpu_launch!(
            dev,
            "h_product",
            grid(n, 256),
            &ptr(HBuf::A),
            &ptr(HBuf::B),
            &n
        ),
        HStep::Finish => {
            let t = &d.from_coset;
            gpu_launch!(
                dev,
                "h_finish",
                grid(n, 256),
                &out,
                &ptr(HBuf::A),
                &ptr(HBuf::C),
                &t.lo.ptr(),
                &t.hi.ptr(),
                &d.kappa.ptr(),
                &t.lo_bits,
                &log_n
            )
        }
    }
}
