//! Fixed-base multiplication on the device, for the setup: `k_i · g` for many scalars and one
//! base, by the byte-window table of [`crate::fixed_base::FixedBase`] (uploaded once), in chunks
//! (`cuda-src/fixed_base.cu`). The device makes the products affine too (one inversion a point),
//! so they come back in blst's layout and are copied into place: the result is the CPU table's,
//! point for point. While the device multiplies one chunk, the host converts the next chunk's
//! scalars.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::points::Curve;
use super::{as_bytes, as_bytes_mut, backend_err, Result};
use crate::fixed_base::{FixedBase, FixedBaseGroup};
use crate::gpu_launch;

/// Scalars a launch multiplies (a G2 chunk's products take 0.8 GB of device memory).
pub const CHUNK: usize = 1 << 22;

/// A group the device multiplies in.
pub trait DeviceGroup: FixedBaseGroup
where
    Self::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    const CURVE: Curve;
}

impl DeviceGroup for G1Projective {
    const CURVE: Curve = Curve::G1;
}

impl DeviceGroup for G2Projective {
    const CURVE: Curve = Curve::G2;
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

    /// Queues the products of one chunk (its scalars in canonical form); the buffer holds the
    /// affine points once the stream ran.
    fn queue(&self, canon: &[[u8; 32]]) -> Result<DevBuf> {
        let scalars = self.dev.upload(as_bytes(canon), "setup scalars")?;
        let out = self
            .dev
            .alloc(canon.len() * G::CURVE.affine_bytes(), "fixed-base products")?;
        let n = canon.len() as u64;
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
        let canon =
            |c: &[Scalar]| -> Vec<[u8; 32]> { c.par_iter().map(|k| k.to_bytes_le()).collect() };
        let mut chunks = out.chunks_mut(CHUNK).zip(ks.chunks(CHUNK)).peekable();
        let mut next = chunks.peek().map(|(_, k)| canon(k));
        while let Some((o, _)) = chunks.next() {
            let buf = self.queue(&next.take().unwrap_or_default())?;
            // The device multiplies this chunk while the host converts the next one's scalars.
            next = chunks.peek().map(|(_, k)| canon(k));
            if buf.len() != std::mem::size_of_val(o) {
                return Err(backend_err("fixed-base chunk of the wrong size"));
            }
            self.dev
                .download(&buf, 0, as_bytes_mut(o), "fixed-base products")?;
        }
        Ok(out)
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
