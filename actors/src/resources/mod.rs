//! What the pipeline budgets and owns: byte budgets with admission control, the tiers that size a
//! partition's device memory, the host's memory as admission reads it, the HostPinner (the only
//! code that pins host memory) and its CUDA pinning, and the devices the engine opens.
//!
//! Resources are the ground floor: they import neither the [`pipeline`](crate::pipeline) nor the
//! [`daemon`](crate::daemon); both use them (`actors/tests/rooms.rs` checks it).

pub mod budget;
pub mod cgroup;
pub(crate) mod cuda_pin;
pub mod devices;
pub mod host_memory;
pub mod pinner;
pub mod tier;
