//! Host-to-device copy rates, the streamed tier's ceilings: a page-locked buffer copied straight
//! (what the registered bases and matrices get), pageable memory copied by the driver, pageable
//! memory through the copy ring (`ring.rs`), and 96-byte points gathered at half density through
//! the ring (the gathered queries' pump, `streamed_gather.rs`). Wall time over whole copies,
//! synchronized, median of `reps`.

use std::io::Write;
use std::time::Instant;

use super::device::GpuDevice;
use super::ring::Ring;
use super::Result;
use crate::gather::gather_bytes;

const GIB: usize = 1 << 30;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Seconds of `f` (which queues copies on `dev`'s stream), synchronized, median of `reps`.
fn wall(dev: &GpuDevice, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    dev.sync("h2d bench warm-up")?;
    let mut v = Vec::new();
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        f()?;
        dev.sync("h2d bench")?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok(median(v))
}

/// Prints `h2d_<path> <ms> ms <GB/s>` for each path and adds `h2d_<path>_gbps` to `rep`.
pub(super) fn run(
    dev: &GpuDevice,
    reps: usize,
    out: &mut impl Write,
    rep: &mut Vec<(String, f64)>,
) -> Result<()> {
    let bytes = 2 * GIB;
    let mut d = dev.alloc(bytes, "h2d bench")?;
    let mut record = |out: &mut dyn Write, name: &str, moved: usize, s: f64, note: &str| {
        let gbps = moved as f64 / s / 1e9;
        let _ = writeln!(
            out,
            "h2d_{name:<10} {:>9.2} ms  {gbps:>6.2} GB/s over {} MiB ({note})",
            s * 1e3,
            moved >> 20
        );
        let _ = out.flush();
        rep.push((format!("h2d_{name}_gbps"), gbps));
    };

    // Page-locked: 64 MiB copies queued back to back from one buffer of 512 MiB.
    let pinned_bytes = 512 << 20;
    let mut pinned = dev.alloc_pinned(pinned_bytes, "h2d bench pinned")?;
    pinned.as_mut_slice()?.fill(7);
    let s = wall(dev, reps, || {
        let src: &[u8] = pinned.as_mut_slice()?;
        for k in 0..bytes / (64 << 20) {
            let at = (k * (64 << 20)) % pinned_bytes;
            dev.upload_into(
                &mut d,
                k * (64 << 20),
                &src[at..at + (64 << 20)],
                "h2d bench",
            )?;
        }
        Ok(())
    })?;
    record(out, "pinned", bytes, s, "page-locked, 64 MiB copies queued");
    drop(pinned);

    // Pageable: the driver stages it.
    let host: Vec<u8> = (0..bytes).map(|i| (i * 31) as u8).collect();
    let s = wall(dev, reps, || dev.upload_into(&mut d, 0, &host, "h2d bench"))?;
    record(out, "pageable", bytes, s, "one copy from pageable memory");

    // Through the copy ring, as the streamed tier's unregistered data goes.
    let mut ring = Ring::new(dev)?;
    let s = wall(dev, reps, || {
        ring.upload(dev, &mut d, 0, &host, "h2d bench")?;
        ring.drain()
    })?;
    record(out, "ring", bytes, s, "pageable through the copy ring");

    // 96-byte points at half density gathered through the ring (a gathered query's ones).
    let elem = 96;
    let idx: Vec<u32> = (0..(bytes / elem) as u32)
        .filter(|i| (i.wrapping_mul(0x9e37_79b9) >> 31) == 1)
        .collect();
    let moved = idx.len() * elem;
    let threads = crate::gather::side_threads();
    let s = wall(dev, reps, || {
        ring.upload_with(
            dev,
            &mut d,
            0,
            idx.len(),
            elem,
            "h2d bench",
            |h, first, count| gather_bytes(h, &host, elem, &idx[first..first + count], threads),
        )?;
        ring.drain()
    })?;
    record(
        out,
        "gather",
        moved,
        s,
        "96-byte points at half density through the ring",
    );
    Ok(())
}
