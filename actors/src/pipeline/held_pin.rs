//! Host memory the streamed tier copies from, pinned once and held while it is streamed: the
//! SRS's host bases (per parameter set) and a recording's matrices (per recording). The value
//! is held with its registration, so its memory is never freed under one; another value's
//! arrival, eviction (`DropResident`) and shutdown (`UnpinStaging`) unpin first.

use std::sync::Arc;
use std::time::Instant;

use actix::Addr;

use crate::resources::pinner::{pin_blocking, HostPinner, PinLease};

/// One pinned value of type `T` (`None` lease: pinning failed, and the copies go through the
/// backend's ring instead).
pub struct HeldPin<T> {
    held: Option<(Arc<T>, Option<PinLease>)>,
    /// What is pinned, for the log.
    what: &'static str,
}

impl<T> HeldPin<T> {
    pub fn new(what: &'static str) -> HeldPin<T> {
        HeldPin { held: None, what }
    }

    /// Pins `value`'s `ranges` (address, bytes) unless `value` is the one held already (another
    /// value's pins are dropped first): whether they are pinned. A failure is logged and costs
    /// only speed.
    pub fn pin(
        &mut self,
        pinner: &Addr<HostPinner>,
        value: &Arc<T>,
        ranges: impl FnOnce(&T) -> Vec<(usize, usize)>,
        gpu: usize,
    ) -> bool {
        if let Some((held, lease)) = &self.held {
            if Arc::ptr_eq(held, value) {
                return lease.is_some();
            }
        }
        self.unpin();
        let start = Instant::now();
        let ranges = ranges(value);
        let total: usize = ranges.iter().map(|x| x.1).sum();
        let l = crate::log::component("upload");
        let lease = match pin_blocking(pinner, ranges) {
            Ok(lease) => {
                slog::info!(l, "pinned the streamed tier's host memory";
                    "what" => self.what, "gpu" => gpu, "mib" => total >> 20,
                    "ms" => start.elapsed().as_millis() as u64);
                Some(lease)
            }
            Err(e) => {
                slog::warn!(l, "the streamed tier's host memory could not be pinned: it is copied through the backend's ring (slower)";
                    "what" => self.what, "gpu" => gpu, "error" => e);
                None
            }
        };
        let pinned = lease.is_some();
        self.held = Some((value.clone(), lease));
        pinned
    }

    /// Unpins (waiting for it) and lets the value go.
    pub fn unpin(&mut self) {
        if let Some((_value, Some(lease))) = self.held.take() {
            lease.unpin();
        }
    }
}
