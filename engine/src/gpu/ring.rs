//! The streamed tier's copy ring: page-locked host buffers of the backend's own, filled by host
//! threads in turn and each copied to the device on the copy stream while the next is filled.
//! What fills a piece is the caller's: a slice's bytes ([`Ring::upload`]) or elements gathered
//! by index ([`Ring::upload_with`], the gathered bases of `streamed_gather.rs`).

use cudarc::driver::CudaEvent;

use super::buf::{DevBuf, PinnedBuf};
use super::{backend_err, GpuDevice, Result};
use crate::pipeline::parallel_copy;

/// Buffers in the ring, and the bytes of each.
const RING_BUFS: usize = 4;
const RING_BYTES: usize = 32 << 20;

/// Page-locked host buffers, used in turn for host-to-device copies (`busy[i]`: the copy still
/// reading buffer `i`).
pub(super) struct Ring {
    bufs: Vec<PinnedBuf>,
    busy: Vec<Option<CudaEvent>>,
    next: usize,
    /// Bytes uploaded through the ring (or, for `moved`'s count, straight from registered host
    /// memory) since the counter was last taken.
    pub(super) moved: u64,
}

impl Ring {
    pub(super) fn new(dev: &GpuDevice) -> Result<Ring> {
        let bufs = (0..RING_BUFS)
            .map(|_| dev.alloc_pinned(RING_BYTES, "the streamed tier's copy ring"))
            .collect::<Result<Vec<_>>>()?;
        Ok(Ring {
            busy: (0..bufs.len()).map(|_| None).collect(),
            bufs,
            next: 0,
            moved: 0,
        })
    }

    /// Queues the copy of `src` to byte `at` of `dst` on `copy`, piece by piece through the ring.
    pub(super) fn upload(
        &mut self,
        copy: &GpuDevice,
        dst: &mut DevBuf,
        at: usize,
        src: &[u8],
        what: &str,
    ) -> Result<()> {
        let threads = copy_threads();
        self.upload_with(copy, dst, at, src.len(), 1, what, |host, first, count| {
            parallel_copy(host, &src[first..first + count], threads)
        })
    }

    /// Queues the copy of `src` to byte `at` of `dst` on `copy`: straight from `src` where it
    /// lies in page-locked memory the caller registered (`pinned`: each copy within one
    /// registration, `copy_pieces`), else through the ring.
    pub(super) fn upload_from(
        &mut self,
        copy: &GpuDevice,
        dst: &mut DevBuf,
        at: usize,
        src: &[u8],
        pinned: bool,
        what: &str,
    ) -> Result<()> {
        if !pinned {
            return self.upload(copy, dst, at, src, what);
        }
        if at + src.len() > dst.len() {
            return Err(backend_err(format!(
                "upload of {what}: {} bytes at {at} exceed the buffer's {}",
                src.len(),
                dst.len()
            )));
        }
        for (a, b) in super::copy_pieces::copy_pieces(src.as_ptr() as usize, src.len()) {
            copy.upload_into(dst, at + a, &src[a..b], what)?;
        }
        self.moved += src.len() as u64;
        Ok(())
    }

    /// Queues the copy of `count` elements of `elem` bytes to byte `at` of `dst` on `copy`, piece
    /// by piece through the ring: `fill(host, first, k)` writes elements `first .. first + k`
    /// into `host` (`k * elem` bytes of a page-locked buffer no copy still reads).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn upload_with(
        &mut self,
        copy: &GpuDevice,
        dst: &mut DevBuf,
        at: usize,
        count: usize,
        elem: usize,
        what: &str,
        fill: impl Fn(&mut [u8], usize, usize),
    ) -> Result<()> {
        let elem = elem.max(1);
        let bytes = count * elem;
        if at + bytes > dst.len() {
            return Err(backend_err(format!(
                "upload of {what}: {bytes} bytes at {at} exceed the buffer's {}",
                dst.len()
            )));
        }
        // Whole elements a piece.
        let per = (RING_BYTES / elem).max(1);
        if per * elem > RING_BYTES {
            return Err(backend_err(format!(
                "upload of {what}: an element of {elem} bytes exceeds a ring buffer"
            )));
        }
        self.moved += bytes as u64;
        let mut first = 0;
        while first < count {
            let k = per.min(count - first);
            let i = self.next % self.bufs.len();
            self.next += 1;
            if let Some(ev) = self.busy[i].take() {
                ev.synchronize().map_err(|e| {
                    backend_err(format!(
                        "upload of {what}: waiting for ring buffer {i}: {e:?}"
                    ))
                })?;
            }
            let host = &mut self.bufs[i].as_mut_slice()?[..k * elem];
            fill(host, first, k);
            copy.upload_into(dst, at + first * elem, host, what)?;
            self.busy[i] = Some(copy.mark()?);
            first += k;
        }
        Ok(())
    }

    /// Waits for every copy still reading the ring.
    pub(super) fn drain(&mut self) -> Result<()> {
        for ev in self.busy.iter_mut().filter_map(Option::take) {
            ev.synchronize()
                .map_err(|e| backend_err(format!("waiting for the copy ring: {e:?}")))?;
        }
        Ok(())
    }
}

/// Host threads that fill a ring buffer.
pub(super) fn copy_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 4)
        .unwrap_or(1)
        .clamp(1, 4)
}
