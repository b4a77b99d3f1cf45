//! Folding XYZZ partial sums on the device: `groups` consecutive groups of `per_group` points
//! each become one point per group, in rounds of at most 32 additions per thread.

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::points::Curve;
use super::{backend_err, Result};
use crate::gpu_launch;

const FAN_IN: u64 = 32;

/// Returns a buffer whose first `groups` XYZZ points are the groups' sums. When `per_group` is
/// not a multiple of the fan-in, `groups` must be 1 (a ragged last chunk would mix groups).
pub fn fold(
    dev: &GpuDevice,
    curve: Curve,
    src: DevBuf,
    groups: u64,
    per_group: u64,
) -> Result<DevBuf> {
    if groups == 0 || per_group == 0 {
        return Err(backend_err("fold of an empty set of partial sums"));
    }
    let name = curve.kernel("reduce_sum");
    let mut cur = src;
    let mut per = per_group;
    while per > 1 {
        let k = FAN_IN.min(per);
        if groups > 1 && !per.is_multiple_of(k) {
            return Err(backend_err(format!(
                "fold: {per} points per group is not a multiple of {k}"
            )));
        }
        let count = groups * per;
        let next_per = per.div_ceil(k);
        let out = dev.alloc(
            (groups * next_per) as usize * curve.xyzz_bytes(),
            "folded partial sums",
        )?;
        let k32 = k as u32;
        gpu_launch!(
            dev,
            &name,
            grid(groups * next_per, 128),
            &cur.ptr(),
            &out.ptr(),
            &count,
            &k32
        )?;
        cur = out;
        per = next_per;
    }
    Ok(cur)
}
