//! `GpuBackend`: the engine's `Backend` on one CUDA GPU. Each call uploads its inputs, runs the
//! kernels on the device's stream and downloads the result; calls are serialised by a mutex
//! (one stream, one allocator). Per-domain NTT tables are built once and kept. Its `Pipeline` is
//! the host defaults but for `memory` (the device's).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Mutex;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;

use super::batch_add::{batch_add_g1_device, batch_add_g2_device};
use super::device::GpuDevice;
use super::h::{compute_h_device, HDomain};
use super::msm::{msm_g1_device, msm_g2_device};
use super::{as_bytes, as_bytes_mut, backend_err, Result};
use crate::backend::{Backend, Bitmap};
use crate::pipeline::{DeviceMemory, Pipeline};

pub struct GpuBackend {
    name: String,
    dev: GpuDevice,
    domains: Mutex<HashMap<u32, HDomain>>,
    lock: Mutex<()>,
}

impl GpuBackend {
    /// Opens GPU `ordinal` and compiles/loads the kernels. Errors say what is missing (driver,
    /// GPU, NVRTC) or what failed.
    pub fn new(ordinal: usize) -> Result<Self> {
        let dev = GpuDevice::open(ordinal)?;
        Ok(GpuBackend {
            name: format!("cuda:{ordinal}"),
            dev,
            domains: Mutex::new(HashMap::new()),
            lock: Mutex::new(()),
        })
    }

    pub fn device(&self) -> &GpuDevice {
        &self.dev
    }

    /// Runs `f` on the device while holding the backend's lock (no other call of this backend
    /// runs meanwhile): for callers that drive the kernels directly, such as tests of explicit
    /// MSM plans.
    pub fn with_device<R>(&self, f: impl FnOnce(&GpuDevice) -> Result<R>) -> Result<R> {
        let _g = self.guard()?;
        f(&self.dev)
    }

    fn guard(&self) -> Result<std::sync::MutexGuard<'_, ()>> {
        self.lock.lock().map_err(|_| {
            backend_err(format!(
                "{}: a previous call panicked while holding the device",
                self.name
            ))
        })
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>> {
        let n = a.len();
        if n == 0 || !n.is_power_of_two() || b.len() != n || c.len() != n {
            return Err(backend_err(format!(
                "compute_h: a, b, c have {}, {}, {} elements; need one power of two",
                n,
                b.len(),
                c.len()
            )));
        }
        if n == 1 {
            return Ok(Vec::new());
        }
        let log_n = n.trailing_zeros();
        let _g = self.guard()?;
        let dev = &self.dev;
        let mut domains = self
            .domains
            .lock()
            .map_err(|_| backend_err("compute_h: domain cache poisoned"))?;
        let d = match domains.entry(log_n) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => v.insert(HDomain::new(dev, log_n)?),
        };
        let da = dev.upload(as_bytes(&a), "H input a")?;
        drop(a);
        let db = dev.upload(as_bytes(&b), "H input b")?;
        drop(b);
        let dc = dev.upload(as_bytes(&c), "H input c")?;
        drop(c);
        compute_h_device(dev, d, da.ptr(), db.ptr(), dc.ptr())?;
        let mut h = vec![Scalar::ZERO; n - 1];
        dev.download(&db, 0, as_bytes_mut(&mut h), "H coefficients")?;
        Ok(h)
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective> {
        if bases.len() != scalars.len() {
            return Err(backend_err(format!(
                "msm_g1: {} bases but {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        let _g = self.guard()?;
        let db = self.dev.upload(as_bytes(bases), "G1 MSM bases")?;
        let ds = self.dev.upload(as_bytes(scalars), "G1 MSM scalars")?;
        msm_g1_device(&self.dev, &db, &ds, bases.len() as u64)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective> {
        if bases.len() != scalars.len() {
            return Err(backend_err(format!(
                "msm_g2: {} bases but {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        let _g = self.guard()?;
        let db = self.dev.upload(as_bytes(bases), "G2 MSM bases")?;
        let ds = self.dev.upload(as_bytes(scalars), "G2 MSM scalars")?;
        msm_g2_device(&self.dev, &db, &ds, bases.len() as u64)
    }

    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective> {
        let n = bases.len();
        let words = check_bitmap("batch_add_g1", n, bits)?;
        let _g = self.guard()?;
        let db = self
            .dev
            .upload(as_bytes(bases), "G1 batch-addition bases")?;
        let dw = self
            .dev
            .upload(as_bytes(words), "G1 batch-addition bitmap")?;
        batch_add_g1_device(&self.dev, &db, &dw, n as u64)
    }

    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective> {
        let n = bases.len();
        let words = check_bitmap("batch_add_g2", n, bits)?;
        let _g = self.guard()?;
        let db = self
            .dev
            .upload(as_bytes(bases), "G2 batch-addition bases")?;
        let dw = self
            .dev
            .upload(as_bytes(words), "G2 batch-addition bitmap")?;
        batch_add_g2_device(&self.dev, &db, &dw, n as u64)
    }
}

/// Call by call: every partition is computed with the heavy steps above, on the host's
/// schedule; only the device's memory is its own.
impl Pipeline for GpuBackend {
    fn memory(&self) -> Option<DeviceMemory> {
        crate::gpu::pool::memory(&self.device().ctx)
            .map_err(|e| log::warn!("{e}: the VRAM budget keeps its last reading"))
            .ok()
    }
}

/// The bitmap words covering `n` bases; bits beyond `n` are ignored by the kernel.
fn check_bitmap<'a>(what: &str, n: usize, bits: &'a Bitmap) -> Result<&'a [u64]> {
    let words = n.div_ceil(64);
    if bits.len() < words {
        return Err(backend_err(format!(
            "{what}: bitmap has {} words, {n} bases need {words}",
            bits.len()
        )));
    }
    Ok(&bits[..words])
}
