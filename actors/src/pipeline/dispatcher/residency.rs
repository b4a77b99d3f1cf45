//! Residency: with `srs_resident` (a GPU pipeline), each GPU holds one SRS's bases (and one MSM's
//! scratch per compute worker; or the bases alone, or nothing, where its budget streams the
//! partitions: `tier::GpuPlan`) under a VRAM reservation of their own, made before the first partition of
//! that SRS goes there and swapped for another SRS only while nothing is staged on the GPU.
//! Evicting the parameters gives that reservation back and has the GPU's UploadActor free the
//! device copy.

use std::sync::Arc;

use actix::prelude::*;
use cuzk_srs::Srs;

use super::placement::Placement;
use super::Dispatcher;
use crate::pipeline::messages::{DropResident, EvictResident, ResidentDropped};
use crate::resources::tier::{Dims, GpuPlan};

impl Placement {
    /// Compute workers per GPU (each may hold one MSM's scratch beside a resident SRS).
    pub(super) fn workers(&self) -> usize {
        (self.depth - 1).max(1)
    }

    /// How `gpu` holds parameters of these dims under its whole budget (a GPU pipeline).
    pub(super) fn gpu_plan(&self, gpu: usize, dims: &Dims) -> Option<GpuPlan> {
        GpuPlan::of(dims, self.vram.get(gpu)?.capacity(), self.workers())
    }

    /// Whether partitions of these dims take the streamed tier on some GPU (their compute then
    /// holds more host memory beside the witness: `Dims::host_streamed`).
    pub(super) fn streams(&self, dims: &Dims) -> bool {
        self.srs_resident
            && (0..self.vram.len()).any(|g| {
                matches!(
                    self.gpu_plan(g, dims),
                    Some(GpuPlan::ResidentBases(_) | GpuPlan::Streamed(_))
                )
            })
    }

    /// Whether partitions of these dims take the streamed tier with their products on the host
    /// on every GPU: then the synthesis threads compute `a, b, c` (`ProveOptions::products_on_host`)
    /// while the GPU proves the partition before, instead of the GPU's compute worker doing it
    /// on its turn.
    pub(super) fn products_on_host(&self, dims: &Dims) -> bool {
        self.srs_resident
            && !self.vram.is_empty()
            && (0..self.vram.len()).all(|g| {
                matches!(
                    self.gpu_plan(g, dims),
                    Some(GpuPlan::ResidentBases(t) | GpuPlan::Streamed(t)) if !t.device_products
                )
            })
    }

    /// Device bytes parameters of these dims keep resident on `gpu`, as its plan says
    /// (`GpuPlan::resident_bytes`: the bases and one MSM's scratch per compute worker, the bases
    /// alone, or nothing); without a plan, what full residency needs (then refused).
    pub(super) fn resident_need(&self, gpu: usize, dims: &Dims) -> u64 {
        match self.gpu_plan(gpu, dims) {
            Some(p) => p.resident_bytes(dims, self.workers()),
            None => dims.resident(self.workers()),
        }
    }

    /// Makes `srs` the SRS resident on `gpu`: its bases and one MSM's scratch are reserved there
    /// until another SRS takes its place, which happens only when nothing is staged on the GPU.
    /// `Some(bytes)` when resident, `None` to wait.
    pub(super) fn make_resident(
        &mut self,
        gpu: usize,
        srs: &Arc<Srs>,
    ) -> Result<Option<u64>, String> {
        let need = self.resident_need(gpu, &Dims::of(srs));
        if let Some((weak, res, bytes)) = &self.resident[gpu] {
            if weak.upgrade().is_some_and(|r| Arc::ptr_eq(&r, srs)) {
                return Ok(Some(*bytes));
            }
            if self.staged[gpu] > 0 {
                return Ok(None);
            }
            self.vram[gpu].release(*res);
            self.resident[gpu] = None;
        }
        if need > self.vram[gpu].capacity() {
            return Err(format!("the parameters need {need} bytes resident on GPU {gpu}, more than its whole budget ({} bytes), and even the streamed tier needs more than the budget", self.vram[gpu].capacity()));
        }
        let id = self.vram[gpu].try_reserve(need);
        if id.is_none() && self.vram[gpu].available() < self.vram[gpu].capacity() {
            self.memory_wait = true; // other processes hold what it needs: look again soon
        }
        Ok(id.map(|id| {
            self.resident[gpu] = Some((Arc::downgrade(srs), id, need));
            need
        }))
    }

    /// Releases `gpu`'s resident-parameter reservation and has its UploadActor free the device
    /// copy (`Pipeline::evict_resident`).
    fn drop_resident(&mut self, gpu: usize) -> Option<ResidentDropped> {
        let (_, res, reserved) = self.resident[gpu].take()?;
        self.vram[gpu].release(res);
        let (tx, freed) = crossbeam_channel::bounded(1);
        match self.uploaders.get(gpu) {
            Some(u) => u.do_send(DropResident { reply: Some(tx) }),
            None => {
                let _ = tx.send(Err(format!("GPU {gpu} has no uploader")));
            }
        }
        Some(ResidentDropped {
            gpu,
            reserved,
            freed,
        })
    }
}

impl Handler<EvictResident> for Dispatcher {
    type Result = ();
    fn handle(&mut self, msg: EvictResident, ctx: &mut Context<Self>) {
        let p = &mut self.placement;
        let mut dropped = Vec::new();
        for gpu in 0..p.resident.len() {
            let Some((weak, _, _)) = &p.resident[gpu] else {
                continue;
            };
            let holder = weak.upgrade();
            let matches = match (&msg.srs, &holder) {
                (_, None) => true,
                (Some(s), Some(h)) => Arc::ptr_eq(s, h),
                (None, Some(_)) => false,
            };
            if !matches {
                continue;
            }
            if p.staged[gpu] > 0 || p.uploading[gpu] {
                slog::info!(
                    crate::log::component("dispatcher"),
                    "resident parameters kept on GPU {} while {} partition(s) are staged there",
                    gpu,
                    p.staged[gpu]
                );
                continue;
            }
            if let Some(d) = p.drop_resident(gpu) {
                dropped.push(d);
            }
        }
        if !dropped.is_empty() {
            // The budget freed may let a waiting partition go.
            self.pump(ctx);
        }
        if let Some(r) = msg.reply {
            let _ = r.send(dropped);
        }
    }
}
