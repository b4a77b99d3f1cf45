//! The VRAM limit from what other processes hold: before each reservation the dispatcher reads a
//! GPU's memory (`Pipeline::memory`) and its budget admits at most total − others − the reserve
//! (`engine.vram_reserve_mib`). A change is logged when what others hold moves by
//! `LIMIT_LOG_STEP` since the figure last logged, not on every read.

use cuzk_engine::Pipeline;

use crate::resources::budget::Budget;

/// A change smaller than this in the memory other processes hold (since the figure last logged)
/// is applied to the VRAM limit without a log line.
const LIMIT_LOG_STEP: u64 = 256 << 20;

/// Reads `gpu`'s memory and limits its budget to what other processes leave: total, less
/// what they (and the driver) hold, less the reserve. Logs when what others hold changes (by
/// `LIMIT_LOG_STEP` since it was last logged), not on every read: a figure near the capacity
/// that moves the limit on and off at each dispatch is one line.
pub(super) fn refresh(
    device: &dyn Pipeline,
    gpu: usize,
    budget: &mut Budget,
    reserve: u64,
    logged: &mut Option<u64>,
) {
    let Some(m) = device.memory() else {
        return;
    };
    let usable = m.total.saturating_sub(m.others()).saturating_sub(reserve);
    let limit = (usable < budget.capacity()).then_some(usable);
    let others = m.others();
    let moved = match (*logged, limit) {
        (None, Some(_)) => true,
        (None, None) => false,
        (Some(was), _) => was.abs_diff(others) >= LIMIT_LOG_STEP,
    };
    if moved {
        *logged = limit.map(|_| others);
        let l = crate::log::component("dispatcher");
        match limit {
            Some(l_now) => {
                slog::warn!(l, "other processes (or this engine's resident recordings) hold device memory: the VRAM budget admits less until they free it";
                "gpu" => gpu, "others_mib" => m.others() >> 20, "free_mib" => m.free >> 20,
                "admits_mib" => l_now >> 20, "capacity_mib" => budget.capacity() >> 20,
                "reserved_mib" => budget.reserved() >> 20)
            }
            None => {
                slog::info!(l, "device memory freed by other processes: the VRAM budget is back to its capacity";
                "gpu" => gpu, "capacity_mib" => budget.capacity() >> 20)
            }
        }
    }
    budget.set_limit(limit);
}
