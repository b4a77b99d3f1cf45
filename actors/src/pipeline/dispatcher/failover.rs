//! Failover: a partition that fails on a device-side stage (upload, kernels, read-back,
//! self-verification) counts against that device; past `device_fail_limit` consecutive failures,
//! and while another device is in service, the device is taken out of service and its work goes
//! to the others. A failed partition whose prepared inputs were kept (while another device is in
//! service) goes back to the ready queue for a device it has not failed on, instead of failing
//! its job. A success clears the device's count.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::Dispatcher;
use crate::pipeline::work::PartKey;

/// The devices' failure counts and service.
pub(super) struct Failover {
    /// Per device: consecutive device-side failures.
    failures: Vec<u32>,
    /// Per device: why it is out of service, if it is.
    pub(super) out_of_service: Vec<Option<String>>,
    /// Consecutive failures that take a device out of service (0: never).
    fail_limit: u32,
}

impl Failover {
    pub(super) fn new(devices: usize, fail_limit: u32) -> Failover {
        Failover {
            failures: vec![0; devices],
            out_of_service: vec![None; devices],
            fail_limit,
        }
    }
}

impl Dispatcher {
    /// The devices in service (those with an uploader).
    fn in_service(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.placement.uploaders.len()).filter(|g| self.failover.out_of_service[*g].is_none())
    }

    /// Whether a partition placed on `gpu` could be retried elsewhere if it failed there: its
    /// prepared inputs are then kept.
    pub(super) fn retry_possible(&self, gpu: usize) -> bool {
        self.failover.fail_limit > 0 && self.in_service().any(|g| g != gpu)
    }

    /// Accounts a partition's end to the device it ran on: `failure` (if it failed) on the
    /// device `device_fault` names counts against that device and retries the partition on
    /// another where it can; a success clears its device's count. Returns whether it was retried.
    pub(super) fn device_outcome(
        &mut self,
        key: PartKey,
        failure: Option<&str>,
        device_fault: Option<usize>,
    ) -> bool {
        match (failure, device_fault) {
            (None, _) => {
                let gpu = self
                    .jobs
                    .get(&key.job)
                    .and_then(|st| st.in_flight.get(&key.partition))
                    .and_then(|f| f.gpu);
                if let Some(n) = gpu.and_then(|g| self.failover.failures.get_mut(g)) {
                    *n = 0;
                }
                false
            }
            (Some(what), Some(g)) => {
                self.device_failed(g, what);
                self.retry(key, g)
            }
            (Some(_), None) => false,
        }
    }

    /// Counts a device-side failure on `gpu`; past the limit, and while another device is in
    /// service, takes it out of service.
    fn device_failed(&mut self, gpu: usize, what: &str) {
        let Some(n) = self.failover.failures.get_mut(gpu) else {
            return;
        };
        *n += 1;
        let n = *n;
        let others = self.in_service().any(|g| g != gpu);
        let f = &mut self.failover;
        if f.fail_limit > 0 && n >= f.fail_limit && others && f.out_of_service[gpu].is_none() {
            let why = format!("{n} consecutive device failures; the last: {what}");
            slog::error!(crate::log::component("dispatcher"), "device taken out of service: its work goes to the other devices"; "gpu" => gpu, "why" => &why);
            f.out_of_service[gpu] = Some(why);
        }
    }

    /// Puts a partition that failed on `gpu` back in the ready queue, for another device in
    /// service, if a copy of it was kept; `false` if not.
    fn retry(&mut self, key: PartKey, gpu: usize) -> bool {
        let elsewhere: Vec<usize> = self.in_service().collect();
        let Some(st) = self.jobs.get_mut(&key.job) else {
            return false;
        };
        if st.cancelled.load(Ordering::Acquire) || st.reply.is_none() {
            return false;
        }
        let Some(f) = st.in_flight.get_mut(&key.partition) else {
            return false;
        };
        f.failed_on.push(gpu);
        if !elsewhere.iter().any(|g| !f.failed_on.contains(g)) {
            return false;
        }
        let Some(prepared) = f.copy.take() else {
            return false;
        };
        if let Some((g, v)) = f.vram.take() {
            self.placement.vram[g].release(v);
        }
        f.gpu = None;
        st.ready.insert(key.partition, (prepared, Instant::now()));
        self.placement
            .ready
            .insert((Reverse(st.priority), key.job, key.partition));
        slog::warn!(
            crate::log::job(key.job, Some(key.partition), &st.kind, Some(gpu)),
            "partition failed on a device: retried on another"
        );
        true
    }
}
