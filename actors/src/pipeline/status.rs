//! What the engine reports of itself ([`Engine::status`](crate::Engine::status)): its jobs,
//! queues and budgets as the dispatcher sees them ([`Status`]), and each device's queue and
//! memory drawn from it ([`DeviceStatus`], for `cuzk ctl status` and gRPC `GetStatus`).

use serde::Serialize;

use crate::pipeline::job::{JobId, Priority};
use crate::resources::budget::{Budget, UNLIMITED};

#[derive(Debug, Clone, Serialize)]
pub struct BudgetStatus {
    pub name: String,
    /// Serialized as 0 when unlimited ([`UNLIMITED`]); `unlimited` says so.
    #[serde(serialize_with = "capacity_or_zero")]
    pub capacity: u64,
    pub unlimited: bool,
    /// What reservations may total now: the capacity, or less while other processes hold
    /// device memory (serialized as 0 when unlimited).
    #[serde(serialize_with = "capacity_or_zero")]
    pub available: u64,
    pub reserved: u64,
    pub high_water: u64,
    pub reservations: usize,
}

impl From<&Budget> for BudgetStatus {
    fn from(b: &Budget) -> Self {
        BudgetStatus {
            name: b.name().into(),
            capacity: b.capacity(),
            unlimited: b.capacity() >= UNLIMITED,
            available: b.available(),
            reserved: b.reserved(),
            high_water: b.high_water(),
            reservations: b.live(),
        }
    }
}

fn capacity_or_zero<S: serde::Serializer>(c: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(if *c >= UNLIMITED { 0 } else { *c })
}

/// One live job.
#[derive(Debug, Clone, Serialize)]
pub struct JobInfo {
    pub id: JobId,
    pub priority: Priority,
    pub partitions: usize,
    pub done: usize,
    /// Partitions holding memory: synthesizing, waiting for a GPU, staged or computing.
    pub in_flight: usize,
    pub cancelled: bool,
    pub age_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub jobs: usize,
    pub job_list: Vec<JobInfo>,
    pub queued_synthesis: usize,
    pub queued_dispatch: usize,
    pub in_flight: usize,
    pub paused: bool,
    pub vram: Vec<BudgetStatus>,
    pub host: BudgetStatus,
    pub dispatch_order: Vec<(JobId, usize)>,
    /// Per GPU: the partitions dispatched to it whose compute has not ended, in dispatch order.
    pub on_gpu: Vec<Vec<(JobId, usize)>>,
    /// Per GPU: the parameter file whose bases are resident there (`srs_resident` only).
    pub resident: Vec<Option<std::path::PathBuf>>,
    /// Per device: why it is out of service (consecutive device failures), or `None`.
    pub out_of_service: Vec<Option<String>>,
    /// Per GPU: whether an upload is in flight (it is the last of `on_gpu`'s partitions there).
    pub uploading: Vec<bool>,
}

/// One device's queue and memory, for `cuzk ctl status` (`gpus`) and gRPC GetStatus.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceStatus {
    /// The engine's device index (budget `vram<index>`, the timeline's `gpu`).
    pub index: usize,
    /// The device's name: a GPU's carries its CUDA ordinal and PCI bus id.
    pub name: String,
    /// The partition (job, partition) being uploaded to it, if any.
    pub uploading: Option<(JobId, usize)>,
    /// Partitions on it waiting for their kernel turn, in staging order.
    pub staged: Vec<(JobId, usize)>,
    /// The oldest partition on it: its kernels run (partitions run one at a time, in staging
    /// order), or its results are being read back.
    pub computing: Option<(JobId, usize)>,
    /// Its VRAM budget: reserved now, and capacity (0 with `vram_unlimited`).
    pub vram_reserved: u64,
    pub vram_capacity: u64,
    pub vram_unlimited: bool,
    /// The parameter file whose bases are resident there.
    pub resident: Option<std::path::PathBuf>,
    pub in_service: bool,
    /// Why it is out of service, if it is.
    pub out_of_service: Option<String>,
    /// All of the above on one line.
    pub summary: String,
}

/// Each device's [`DeviceStatus`] from the dispatcher's status and the devices' names.
pub fn device_status(st: &Status, names: &[String]) -> Vec<DeviceStatus> {
    st.vram
        .iter()
        .enumerate()
        .map(|(i, b)| {
            DeviceStatus::of(
                i,
                names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("device {i}")),
                b,
                st.on_gpu.get(i).map_or(&[][..], |v| &v[..]),
                st.uploading.get(i).copied().unwrap_or(false),
                st.resident.get(i).cloned().flatten(),
                st.out_of_service.get(i).cloned().flatten(),
            )
        })
        .collect()
}

impl DeviceStatus {
    /// Device `index`: `on` its partitions in dispatch order (`uploading`: the last of them is
    /// being uploaded), `b` its VRAM budget.
    pub fn of(
        index: usize,
        name: String,
        b: &BudgetStatus,
        on: &[(JobId, usize)],
        uploading: bool,
        resident: Option<std::path::PathBuf>,
        out_of_service: Option<String>,
    ) -> DeviceStatus {
        let key = |k: &(JobId, usize)| format!("{}/{}", k.0, k.1);
        let mut on = on.to_vec();
        let uploading = if uploading { on.pop() } else { None };
        let computing = (!on.is_empty()).then(|| on.remove(0));
        let staged = on;
        let unlimited = b.capacity >= UNLIMITED;
        let mib = |x: u64| x as f64 / (1u64 << 20) as f64;
        let summary = format!(
            "device {index} {name}: {}; computing {}; staged {} [{}]; uploading {}; vram {:.0} of {} MiB reserved; resident {}",
            match &out_of_service {
                Some(why) => format!("OUT OF SERVICE ({why})"),
                None => "in service".into(),
            },
            computing.as_ref().map_or("-".into(), key),
            staged.len(),
            staged.iter().map(key).collect::<Vec<_>>().join(" "),
            uploading.as_ref().map_or("-".into(), key),
            mib(b.reserved),
            if unlimited {
                "unlimited".into()
            } else {
                format!("{:.0}", mib(b.capacity))
            },
            resident
                .as_ref()
                .map_or("-".into(), |p| p.display().to_string()),
        );
        DeviceStatus {
            index,
            name,
            uploading,
            staged,
            computing,
            vram_reserved: b.reserved,
            vram_capacity: if unlimited { 0 } else { b.capacity },
            vram_unlimited: unlimited,
            resident,
            in_service: out_of_service.is_none(),
            out_of_service,
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_status_splits_each_queue_into_computing_staged_and_uploading() {
        let budget = |capacity: u64, reserved: u64| {
            let mut b = Budget::new("vram", capacity);
            if reserved > 0 {
                b.try_reserve(reserved).unwrap();
            }
            BudgetStatus::from(&b)
        };
        let on = [(1, 0), (1, 2), (2, 0), (2, 1)];
        let d = DeviceStatus::of(
            0,
            "H200 (cuda 1, pci 0000:19:00.0)".into(),
            &budget(8 << 30, 3 << 30),
            &on,
            true,
            Some("/p/a.params".into()),
            None,
        );
        assert_eq!(
            (d.computing, d.staged.clone(), d.uploading),
            (Some((1, 0)), vec![(1, 2), (2, 0)], Some((2, 1)))
        );
        assert_eq!(
            (d.vram_reserved, d.vram_capacity, d.in_service),
            (3 << 30, 8 << 30, true)
        );
        assert!(
            d.summary
                .contains("device 0 H200 (cuda 1, pci 0000:19:00.0): in service")
                && d.summary
                    .contains("computing 1/0; staged 2 [1/2 2/0]; uploading 2/1")
                && d.summary.contains("vram 3072 of 8192 MiB")
                && d.summary.contains("/p/a.params"),
            "{}",
            d.summary
        );
        // Not uploading: the last partition is staged.
        let d = DeviceStatus::of(0, "x".into(), &budget(8 << 30, 0), &on, false, None, None);
        assert_eq!((d.staged.len(), d.uploading), (3, None));
        let why = Some("3 consecutive failures".to_string());
        let d = DeviceStatus::of(
            1,
            "cpu".into(),
            &budget(UNLIMITED, 0),
            &[],
            false,
            None,
            why,
        );
        assert_eq!((d.computing, d.staged.len(), d.uploading), (None, 0, None));
        assert!(!d.in_service && d.vram_unlimited && d.vram_capacity == 0);
        assert!(
            d.summary
                .contains("OUT OF SERVICE (3 consecutive failures)")
                && d.summary.contains("of unlimited MiB"),
            "{}",
            d.summary
        );
        // A partition being uploaded is not also computing.
        let d = DeviceStatus::of(
            2,
            "y".into(),
            &budget(1 << 30, 0),
            &[(1, 1)],
            true,
            None,
            None,
        );
        assert_eq!((d.computing, d.uploading), (None, Some((1, 1))));
    }
}
