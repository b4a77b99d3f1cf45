//! `Faulty`: a real backend wrapped so that the fault plan fires inside its calls (feature
//! `faults`). Each kernel step is a site of its own (H, each query's MSM and batch addition, told
//! apart by which SRS section the bases lie in), and so are `stage` and `collect`.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::backend::{run_steps, Bitmap};
use cuzk_engine::pipeline::{foreign, Computed, DeviceMemory, Staged};
use cuzk_engine::prover::{Prepared, Sums};
use cuzk_engine::{Backend, EngineError, Pipeline, Timings};
use cuzk_srs::Srs;
use group::Group;

use super::{scoped_key, Faults, Query, Site, Stage};

/// How a wrapped host backend stages partitions (a device backend's own way is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// As the inner backend does.
    Inner,
    /// As a device backend copying from the partition's own buffers: the uploader pins them,
    /// stages (a copy), unpins.
    Pinned,
    /// As `PipelinedGpu`: through two pinned staging buffers of this many bytes.
    Through(usize),
}

pub struct Faulty {
    inner: Arc<dyn Pipeline>,
    device: usize,
    faults: Faults,
    staging: Staging,
    memory: Option<Tenants>,
}

/// A simulated device's memory for a wrapped host backend: `total` bytes, of which other
/// processes hold what the test sets ([`Tenants::hold`]); the engine's own use is not simulated
/// (`ours` = 0), so the budget sees `free = total - held`.
#[derive(Clone)]
pub struct Tenants {
    total: u64,
    held: Arc<std::sync::atomic::AtomicU64>,
}

impl Tenants {
    pub fn new(total: u64) -> Tenants {
        Tenants {
            total,
            held: Arc::default(),
        }
    }
    /// Other processes now hold `bytes` of the device.
    pub fn hold(&self, bytes: u64) {
        self.held
            .store(bytes.min(self.total), std::sync::atomic::Ordering::SeqCst);
    }
    fn memory(&self) -> DeviceMemory {
        let held = self.held.load(std::sync::atomic::Ordering::SeqCst);
        DeviceMemory {
            free: self.total - held,
            total: self.total,
            ours: 0,
        }
    }
}

impl Faulty {
    pub fn new(inner: Arc<dyn Pipeline>, device: usize, faults: &Faults) -> Faulty {
        Faulty {
            inner,
            device,
            faults: faults.clone(),
            staging: Staging::Inner,
            memory: None,
        }
    }

    /// Reports `tenants`' simulated device memory instead of the inner backend's.
    pub fn tenants(mut self, tenants: &Tenants) -> Faulty {
        self.memory = Some(tenants.clone());
        self
    }

    pub fn staging(mut self, s: Staging) -> Faulty {
        self.staging = s;
        self
    }

    fn site(&self, stage: Stage) -> Site {
        Site {
            stage,
            key: scoped_key(),
            device: Some(self.device),
        }
    }

    fn hit(&self, stage: Stage) -> Result<(), EngineError> {
        self.faults
            .hit(self.site(stage))
            .map_err(|what| EngineError::Backend {
                backend: self.inner.name().into(),
                what,
            })
    }

    fn corrupt(&self, stage: Stage) -> bool {
        self.faults.corrupt(self.site(stage))
    }
}

/// The wrapped backend's steps for one partition: knows the SRS, so it can tell the queries apart.
struct Steps<'a> {
    f: &'a Faulty,
    srs: &'a Srs,
}

fn within<T>(part: &[T], whole: &[T]) -> bool {
    let (p, w) = (part.as_ptr_range(), whole.as_ptr_range());
    !part.is_empty() && p.start >= w.start && p.end <= w.end
}

impl Steps<'_> {
    fn query_g1(&self, bases: &[G1Affine]) -> Query {
        if within(bases, self.srs.h()) {
            Query::H
        } else if within(bases, self.srs.l()) {
            Query::L
        } else if within(bases, self.srs.a()) {
            Query::A
        } else {
            Query::BG1
        }
    }

    fn g1(
        &self,
        stage: Stage,
        r: Result<G1Projective, EngineError>,
    ) -> Result<G1Projective, EngineError> {
        Ok(r?
            + if self.f.corrupt(stage) {
                G1Projective::generator()
            } else {
                G1Projective::identity()
            })
    }

    fn g2(
        &self,
        stage: Stage,
        r: Result<G2Projective, EngineError>,
    ) -> Result<G2Projective, EngineError> {
        Ok(r?
            + if self.f.corrupt(stage) {
                G2Projective::generator()
            } else {
                G2Projective::identity()
            })
    }
}

impl Backend for Steps<'_> {
    fn name(&self) -> &str {
        self.f.name()
    }
    fn compute_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, EngineError> {
        self.f.hit(Stage::H)?;
        let mut h = self.f.inner.compute_h(a, b, c)?;
        if self.f.corrupt(Stage::H) {
            if let Some(x) = h.first_mut() {
                *x += Scalar::from(1u64);
            }
        }
        Ok(h)
    }
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError> {
        let stage = Stage::Msm(self.query_g1(bases));
        self.f.hit(stage)?;
        self.g1(stage, self.f.inner.msm_g1(bases, scalars))
    }
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError> {
        let stage = Stage::Msm(Query::BG2);
        self.f.hit(stage)?;
        self.g2(stage, self.f.inner.msm_g2(bases, scalars))
    }
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError> {
        let stage = Stage::BatchAdd(self.query_g1(bases));
        self.f.hit(stage)?;
        self.g1(stage, self.f.inner.batch_add_g1(bases, bits))
    }
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError> {
        let stage = Stage::BatchAdd(Query::BG2);
        self.f.hit(stage)?;
        self.g2(stage, self.f.inner.batch_add_g2(bases, bits))
    }
}

impl Backend for Faulty {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn compute_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, EngineError> {
        self.hit(Stage::H)?;
        self.inner.compute_h(a, b, c)
    }
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError> {
        self.inner.msm_g1(bases, scalars)
    }
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError> {
        self.inner.msm_g2(bases, scalars)
    }
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError> {
        self.inner.batch_add_g1(bases, bits)
    }
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError> {
        self.inner.batch_add_g2(bases, bits)
    }
}

impl Pipeline for Faulty {
    fn evict_resident(&self) -> Result<u64, EngineError> {
        self.inner.evict_resident()
    }
    fn memory(&self) -> Option<DeviceMemory> {
        match &self.memory {
            Some(t) => Some(t.memory()),
            None => self.inner.memory(),
        }
    }
    fn stages_on_device(&self) -> bool {
        match self.staging {
            Staging::Inner => self.inner.stages_on_device(),
            Staging::Pinned | Staging::Through(_) => true,
        }
    }
    fn splits_on_device(&self) -> bool {
        matches!(self.staging, Staging::Inner) && self.inner.splits_on_device()
    }
    fn staging_bytes(&self) -> usize {
        match self.staging {
            Staging::Inner => self.inner.staging_bytes(),
            Staging::Pinned => 0,
            Staging::Through(n) => n,
        }
    }
    fn stage(&self, p: &Prepared) -> Result<Staged, EngineError> {
        self.hit(Stage::Upload)?;
        self.inner.stage(p)
    }
    fn stage_through(
        &self,
        p: &Prepared,
        staging: &mut [&mut [u8]],
    ) -> Result<Staged, EngineError> {
        self.hit(Stage::Upload)?;
        self.inner.stage_through(p, staging)
    }
    fn compute(&self, srs: &Srs, staged: Staged, t: &mut Timings) -> Result<Computed, EngineError> {
        if self.inner.stages_on_device() {
            // A device backend computes in its own way (queued kernels): one site for all of it.
            self.hit(Stage::H)?;
            return self.inner.compute(srs, staged, t);
        }
        let Staged {
            index,
            public_inputs,
            payload,
        } = staged;
        let p = payload
            .downcast::<Prepared>()
            .map_err(|_| foreign(self.name(), "staged"))?;
        let sums = run_steps(&Steps { f: self, srs }, srs, *p, t)?;
        Ok(Computed::on_host(index, public_inputs, sums))
    }
    fn compute_then(
        &self,
        srs: &Srs,
        staged: Staged,
        t: &mut Timings,
        launched: &mut dyn FnMut(),
    ) -> Result<Computed, EngineError> {
        if self.inner.stages_on_device() {
            self.hit(Stage::H)?;
            return self.inner.compute_then(srs, staged, t, launched);
        }
        let r = self.compute(srs, staged, t);
        launched();
        r
    }
    fn collect(&self, c: Computed, t: &mut Timings) -> Result<Sums, EngineError> {
        self.hit(Stage::Collect)?;
        let mut sums = self.inner.collect(c, t)?;
        if self.corrupt(Stage::Collect) {
            sums.a += G1Projective::generator();
        }
        Ok(sums)
    }
}
