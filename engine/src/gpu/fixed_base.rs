//! Fixed-base multiplication on the device, for the setup: `k_i · g` for many scalars and one
//! base, by the byte-window table of [`crate::fixed_base::FixedBase`] (uploaded once), in chunks
//! (`cuda-src/fixed_base.cu`). While the device multiplies one chunk, the host makes the last
//! one affine (one batch inversion per 1024 points), so the result is the CPU table's, point for
//! point.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::points::{g1_from_xyzz, g2_from_xyzz, Curve};
use super::{as_bytes, backend_err, Result};
use crate::fixed_base::{FixedBase, FixedBaseGroup};
use crate::gpu_launch;

/// Scalars a launch multiplies (the XYZZ products of a G2 chunk take 1.6 GB of device memory).
pub const CHUNK: usize = 1 << 22;

/// A group the device multiplies in: its curve and its XYZZ decoding.
pub trait DeviceGroup: FixedBaseGroup
where
    Self::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    const CURVE: Curve;
    fn from_xyzz(b: &[u8]) -> Self;
}

impl DeviceGroup for G1Projective {
    const CURVE: Curve = Curve::G1;
    fn from_xyzz(b: &[u8]) -> Self {
        g1_from_xyzz(b)
    }
}

impl DeviceGroup for G2Projective {
    const CURVE: Curve = Curve::G2;
    fn from_xyzz(b: &[u8]) -> Self {
        g2_from_xyzz(b)
    }
}

/// One base's window table resident on a device.
pub struct DeviceFixedBase<'d, G: DeviceGroup>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    dev: &'d GpuDevice,
    table: DevBuf,
    _g: std::marker::PhantomData<G>,
}

impl<'d, G: DeviceGroup> DeviceFixedBase<'d, G>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    /// Uploads `t`'s table to `dev`.
    pub fn new(dev: &'d GpuDevice, t: &FixedBase<G>) -> Result<Self> {
        let table = dev.upload(as_bytes(t.table()), "fixed-base table")?;
        Ok(DeviceFixedBase {
            dev,
            table,
            _g: std::marker::PhantomData,
        })
    }

    /// Queues the products of one chunk; the buffer holds their XYZZ forms once the stream ran.
    fn queue(&self, ks: &[Scalar]) -> Result<DevBuf> {
        let canon: Vec<[u8; 32]> = ks.par_iter().map(|k| k.to_bytes_le()).collect();
        let scalars = self.dev.upload(as_bytes(&canon), "setup scalars")?;
        let out = self
            .dev
            .alloc(ks.len() * G::CURVE.xyzz_bytes(), "fixed-base products")?;
        let n = ks.len() as u64;
        gpu_launch!(
            self.dev,
            &G::CURVE.kernel("fixed_base"),
            grid(n, 128),
            &self.table.ptr(),
            &scalars.ptr(),
            &out.ptr(),
            &n
        )?;
        // The scalars' buffer may go: frees are ordered on the stream after the kernel.
        Ok(out)
    }

    /// `k · g` for every `k`, as affine points (the identity for `k = 0`).
    pub fn mul_all(&self, ks: &[Scalar]) -> Result<Vec<G::AffineRepr>> {
        let mut out = vec![G::AffineRepr::identity(); ks.len()];
        let xb = G::CURVE.xyzz_bytes();
        let mut raw = vec![0u8; CHUNK.min(ks.len()) * xb];
        let mut pending: Option<(usize, DevBuf)> = None;
        let mut next = 0;
        loop {
            // The next chunk is queued before the last one is read back and made affine, so the
            // device works while the host converts.
            let queued = if next < ks.len() {
                let end = (next + CHUNK).min(ks.len());
                let buf = self.queue(&ks[next..end])?;
                let q = (next, buf);
                next = end;
                Some(q)
            } else {
                None
            };
            if let Some((start, buf)) = pending.take() {
                self.convert(&buf, start, &mut raw, &mut out)?;
            }
            match queued {
                Some(q) => pending = Some(q),
                None => break,
            }
        }
        Ok(out)
    }

    /// Reads back the chunk that starts at `start` and writes its affine points into `out`.
    fn convert(
        &self,
        buf: &DevBuf,
        start: usize,
        raw: &mut [u8],
        out: &mut [G::AffineRepr],
    ) -> Result<()> {
        let xb = G::CURVE.xyzz_bytes();
        let n = buf.len() / xb;
        if start + n > out.len() {
            return Err(backend_err("fixed-base chunk past the output"));
        }
        let raw = &mut raw[..n * xb];
        self.dev.download(buf, 0, raw, "fixed-base products")?;
        out[start..start + n]
            .par_chunks_mut(1024)
            .zip(raw.par_chunks(1024 * xb))
            .for_each(|(o, r)| {
                let proj: Vec<G> = r.chunks_exact(xb).map(G::from_xyzz).collect();
                G::batch_normalize(&proj, o);
            });
        Ok(())
    }
}

/// G1 and G2 products for the setup, from the tables of its two generators.
pub fn mul_all_g1(
    dev: &GpuDevice,
    t: &FixedBase<G1Projective>,
    ks: &[Scalar],
) -> Result<Vec<G1Affine>> {
    DeviceFixedBase::new(dev, t)?.mul_all(ks)
}

pub fn mul_all_g2(
    dev: &GpuDevice,
    t: &FixedBase<G2Projective>,
    ks: &[Scalar],
) -> Result<Vec<G2Affine>> {
    DeviceFixedBase::new(dev, t)?.mul_all(ks)
}
