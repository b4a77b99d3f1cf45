//! UploadActor (one per GPU): owns the copy stream. Takes one partition at a time, in the order
//! the dispatcher hands them out (nearest to compute first), stages it on the backend (a GPU
//! backend uploads here) and hands it to compute. A backend that copies through staging buffers
//! (`Pipeline::staging_bytes`) gets two pinned by the HostPinner once, on first use, and reused
//! for every partition (nothing is pinned per partition); for any other backend that stages on a
//! device, the partition's own buffers are pinned for the upload and unpinned before they are
//! freed. A partition of the streamed tier (`Prepared::stream`) is handed on as it is (its steps
//! upload what they need inside compute); the SRS's host bases it streams from are pinned once
//! per parameter set, and the recording's matrices it streams once per recording (each kept
//! while it is streamed here, `held_pin.rs`), so their chunks are copied straight from them (its
//! witness was packed at synthesis, `ProveOptions::pack_witness`: the dispatcher hands a streamed
//! partition here only when the GPU's compute is free, so what runs here is on the GPU's turn).
//!
//! `DropResident` runs the backend's `evict_resident` on this GPU's own uploader thread (the
//! resident bases freed after the kernel stream); `UnpinStaging`, at shutdown, unpins the
//! staging buffers.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_engine::pipeline::Staged;
use cuzk_engine::prover::Prepared;
use cuzk_engine::Pipeline;

use crate::fault::{catch, scope, Faults, Site, Stage};
use crate::pipeline::compute::{ComputeActor, ComputeQueue};
use crate::pipeline::held_pin::HeldPin;
use crate::pipeline::messages::{
    Compute, ComputeDone, DropResident, Dropped, PartitionDone, StageReports, UnpinStaging, Upload,
    UploadDone,
};
use crate::pipeline::timeline::{Lane, Timeline};
use crate::pipeline::work::failed_at;
use crate::resources::pinner::{pin_blocking, staging_blocking, HostPinner, StagingLease};

pub struct UploadActor {
    pub gpu: usize,
    pub backend: Arc<dyn Pipeline>,
    pub pinner: Addr<HostPinner>,
    pub compute: Addr<ComputeActor>,
    /// The dispatcher, told when this GPU's uploader is free again.
    pub upload_done: Recipient<UploadDone>,
    /// The dispatcher, told what becomes of a partition here (dropped, failed).
    pub reports: StageReports,
    pub timeline: Timeline,
    /// This GPU's staged partitions waiting for a compute worker (taken best first).
    pub queue: Arc<ComputeQueue>,
    /// The pinned staging buffers, once asked for.
    pub staging: Option<StagingLease>,
    /// The fault plan (tests; inert without the `faults` feature).
    pub faults: Faults,
    /// The SRS streamed here, its host bases pinned (`held_pin.rs`).
    pub srs_pin: HeldPin<cuzk_srs::Srs>,
    /// The recording whose matrices are streamed here, its host image pinned.
    pub recording_pin: HeldPin<cuzk_engine::recorded::Recording>,
}

impl UploadActor {
    /// Unpins what the streamed tier copies from (waiting for it) and lets it go.
    fn unpin_streamed(&mut self) {
        self.srs_pin.unpin();
        self.recording_pin.unpin();
    }

    /// Stages `p` through the pinned staging buffers (pinned on first use).
    fn stage_through(
        &mut self,
        p: &Prepared,
        key: crate::pipeline::work::PartKey,
        lane: Lane,
        start: Instant,
        bytes: u64,
    ) -> Result<Staged, (&'static str, String)> {
        if self.staging.is_none() {
            let lease = self
                .pin_hook(key)
                .and_then(|()| staging_blocking(&self.pinner, 2, self.backend.staging_bytes()))
                .map_err(|e| ("pin", format!("pinning staging buffers: {e}")))?;
            self.timeline
                .record(key, "pin", lane, start, Instant::now(), 0);
            self.staging = Some(lease);
        }
        let from = Instant::now();
        let lease = self
            .staging
            .as_mut()
            .ok_or(("upload", "no staging buffers".to_string()))?;
        let backend = &self.backend;
        let staged = catch("upload", || {
            scope(key, || backend.stage_through(p, &mut lease.buffers())).map_err(|e| e.to_string())
        })
        .map_err(|e| ("upload", e));
        self.timeline
            .record(key, "upload", lane, from, Instant::now(), bytes);
        staged
    }
}

impl UploadActor {
    fn pin_hook(&self, key: crate::pipeline::work::PartKey) -> Result<(), String> {
        let site = Site {
            stage: Stage::Pin,
            key: Some(key),
            device: Some(self.gpu),
        };
        catch("pinning", || self.faults.hit(site))
    }
}

impl Actor for UploadActor {
    type Context = SyncContext<Self>;
}

fn ranges(p: &Prepared) -> Vec<(usize, usize)> {
    let r = |v: &Vec<blstrs::Scalar>| (v.as_ptr() as usize, std::mem::size_of_val(v.as_slice()));
    let mut out = vec![
        r(&p.a),
        r(&p.b),
        r(&p.c),
        r(&p.l.tail),
        r(&p.a_query.tail),
        r(&p.b_query.tail),
    ];
    // The recorded path uploads the witness.
    if let Some(w) = &p.recorded {
        out.extend([r(&w.inputs), r(&w.aux)]);
    }
    out
}

impl Handler<Upload> for UploadActor {
    type Result = ();

    fn handle(&mut self, msg: Upload, _: &mut SyncContext<Self>) {
        let Upload {
            ticket,
            prepared,
            bytes,
        } = msg;
        let key = ticket.key;
        let lane = Lane {
            gpu: Some(self.gpu),
            worker: None,
        };
        if ticket.is_cancelled() {
            self.upload_done.do_send(UploadDone { gpu: self.gpu, key });
            self.reports
                .compute_done
                .do_send(ComputeDone { gpu: self.gpu, key });
            self.reports.dropped.do_send(Dropped { key });
            return;
        }
        let start = Instant::now();
        let mut prepared = prepared;
        let staged = if let Some(tier) = prepared.stream.as_mut() {
            // The streamed tier: nothing is staged ahead; its bases are read from the host.
            let pin = Instant::now();
            let r = |b: &[u8]| (b.as_ptr() as usize, b.len());
            if !tier.resident_bases {
                use cuzk_engine::gpu::as_bytes;
                let bases = |srs: &cuzk_srs::Srs| {
                    vec![
                        r(as_bytes(srs.h())),
                        r(as_bytes(srs.l())),
                        r(as_bytes(srs.a())),
                        r(as_bytes(srs.b_g1())),
                        r(as_bytes(srs.b_g2())),
                    ]
                };
                tier.pinned_bases = self.srs_pin.pin(&self.pinner, &ticket.srs, bases, self.gpu);
            }
            if let Some(rec) = prepared.recorded.as_ref() {
                if tier.device_products && !tier.resident_recording {
                    tier.pinned_recording = self.recording_pin.pin(
                        &self.pinner,
                        &rec.rec,
                        |rec| vec![r(rec.host_image())],
                        self.gpu,
                    );
                }
            }
            self.timeline
                .record(key, "pin", lane, pin, Instant::now(), 0);
            let staged = Staged::on_host(prepared);
            self.timeline
                .record(key, "upload", lane, start, Instant::now(), 0);
            Ok(staged)
        } else if self.backend.stages_on_device() && self.backend.staging_bytes() > 0 {
            let staged = self.stage_through(&prepared, key, lane, start, bytes);
            drop(prepared);
            staged
        } else if self.backend.stages_on_device() {
            let pinned = self
                .pin_hook(key)
                .and_then(|()| pin_blocking(&self.pinner, ranges(&prepared)));
            match pinned {
                Err(e) => Err(("pin", format!("pinning host memory: {e}"))),
                Ok(lease) => {
                    let pinned = Instant::now();
                    self.timeline.record(key, "pin", lane, start, pinned, 0);
                    let backend = &self.backend;
                    let staged = catch("upload", || {
                        scope(key, || backend.stage(&prepared)).map_err(|e| e.to_string())
                    })
                    .map_err(|e| ("upload", e));
                    self.timeline
                        .record(key, "upload", lane, pinned, Instant::now(), bytes);
                    // Unpinned (and waited for) before the host buffers are freed: the driver
                    // must never hold pages that the allocator may hand out again.
                    lease.unpin();
                    drop(prepared);
                    staged
                }
            }
        } else {
            // Nothing to copy: the partition stays on the host for a backend that computes there
            // (or uploads inside compute).
            let staged = Staged::on_host(prepared);
            self.timeline
                .record(key, "upload", lane, start, Instant::now(), 0);
            Ok(staged)
        };
        self.upload_done.do_send(UploadDone { gpu: self.gpu, key });
        match staged {
            Ok(staged) => {
                self.queue.push(ticket, staged);
                self.compute.do_send(Compute);
            }
            Err(_) if ticket.is_cancelled() => {
                // Cancelled while it was staged: dropped, not failed nor retried.
                self.reports
                    .compute_done
                    .do_send(ComputeDone { gpu: self.gpu, key });
                self.reports.dropped.do_send(Dropped { key });
            }
            Err((stage, what)) => {
                // It will never reach compute: free its slot there too.
                self.reports
                    .compute_done
                    .do_send(ComputeDone { gpu: self.gpu, key });
                self.reports.partition_done.do_send(PartitionDone {
                    key,
                    result: Err(failed_at(stage, self.gpu, self.backend.name(), what)),
                    // Pinning is the host's; the copy is the device's.
                    device_fault: (stage != "pin").then_some(self.gpu),
                });
            }
        }
    }
}

impl Handler<DropResident> for UploadActor {
    type Result = ();

    fn handle(&mut self, msg: DropResident, _: &mut SyncContext<Self>) {
        self.unpin_streamed();
        let backend = &self.backend;
        let r = catch("evicting the resident parameters", || {
            backend.evict_resident().map_err(|e| e.to_string())
        })
        .map_err(|e| format!("GPU {} ({}): {e}", self.gpu, self.backend.name()));
        let l = crate::log::component("upload");
        match &r {
            Ok(bytes) => {
                slog::info!(l, "resident parameters freed"; "gpu" => self.gpu, "device_bytes" => *bytes)
            }
            Err(e) => slog::error!(l, "{}", e; "gpu" => self.gpu),
        }
        if let Some(reply) = msg.reply {
            let _ = reply.send(r);
        }
    }
}

impl Handler<UnpinStaging> for UploadActor {
    type Result = ();

    fn handle(&mut self, msg: UnpinStaging, _: &mut SyncContext<Self>) {
        drop(self.staging.take());
        self.unpin_streamed();
        let _ = msg.reply.send(());
    }
}
