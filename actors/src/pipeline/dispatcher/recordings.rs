//! Recordings resident on the GPUs: where a card has room for them beside a partition's steps
//! (an 80 GB card beside the resident bases, a 32 GiB one with the bases streamed, at 32 GiB
//! PoRep), the streamed tier keeps a shape's recorded matrices resident
//! (`StreamTier::resident_recording`), so of the partition's own data only the witness crosses
//! PCIe.
//!
//! The GPU uploads a recording on the first partition of its shape that takes that tier, and
//! then holds it outside every reservation (`Pipeline::memory` counts it as others' memory). That
//! first partition reserves the recording's bytes with its own (`RecordingOnGpu::resident`
//! false); the dispatcher remembers which shapes each GPU then holds, later partitions reserve
//! only their steps, and the GPU's budget admits only what is left beside the held recordings
//! ([`ResidentRecordings::held_bytes`]): a VRAM budget below the card's counts them too.

use std::collections::{HashMap, HashSet};

use cuzk_engine::gpu::stream_plan::RecordingOnGpu;
use cuzk_engine::recorded::Recording;

/// Per GPU, the shapes whose recordings a partition was sent to keep resident; and each shape's
/// device bytes (counted once).
#[derive(Default)]
pub(super) struct ResidentRecordings {
    held: Vec<HashSet<[u8; 32]>>,
    bytes: HashMap<[u8; 32], u64>,
}

impl ResidentRecordings {
    pub(super) fn new(gpus: usize) -> Self {
        ResidentRecordings {
            held: vec![HashSet::new(); gpus],
            bytes: HashMap::new(),
        }
    }

    /// `rec` as `gpu` would hold it: its device bytes, and whether it is resident there already.
    pub(super) fn on(&mut self, gpu: usize, rec: &Recording) -> RecordingOnGpu {
        let hash = *rec.shape_hash();
        let bytes = *self.bytes.entry(hash).or_insert_with(|| rec.device_bytes());
        RecordingOnGpu {
            bytes,
            resident: self.held.get(gpu).is_some_and(|h| h.contains(&hash)),
        }
    }

    /// Device bytes of the recordings `gpu` holds (or was sent a partition to keep).
    pub(super) fn held_bytes(&self, gpu: usize) -> u64 {
        self.held.get(gpu).map_or(0, |h| {
            h.iter()
                .map(|s| self.bytes.get(s).copied().unwrap_or(0))
                .sum()
        })
    }

    /// A partition of `rec`'s shape was sent to `gpu` to keep it resident.
    pub(super) fn sent(&mut self, gpu: usize, rec: &Recording) {
        if let Some(h) = self.held.get_mut(gpu) {
            h.insert(*rec.shape_hash());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_engine::circuits::MulChain;
    use cuzk_engine::recorded::record;

    #[test]
    fn a_recording_is_resident_on_a_gpu_only_after_a_partition_was_sent_there_to_keep_it() {
        let (rec, _) = record(MulChain::random(64, 1, 1), false, 0).unwrap();
        let mut r = ResidentRecordings::new(2);
        let before = r.on(0, &rec);
        assert!(!before.resident);
        assert_eq!(before.bytes, rec.device_bytes());
        r.sent(0, &rec);
        assert!(r.on(0, &rec).resident);
        assert!(!r.on(1, &rec).resident, "each GPU holds its own copy");
        assert_eq!((r.held_bytes(0), r.held_bytes(1)), (rec.device_bytes(), 0));
        r.sent(0, &rec);
        assert_eq!(r.held_bytes(0), rec.device_bytes(), "a shape counts once");
    }
}
