//! Device buffers as raw byte allocations from the stream's allocator (cudarc uses the driver's
//! async memory pool when the device has one: the one allocator of the backend). Kernels receive
//! raw device addresses; every buffer is used only on the device's single stream.

use cudarc::driver::{CudaSlice, DevicePtr};

use super::device::GpuDevice;
use super::{backend_err, Result};

pub struct DevBuf {
    s: CudaSlice<u8>,
}

impl DevBuf {
    /// Wraps memory allocated on another stream of the same context (the pipeline's copy stream).
    pub fn from_slice(s: CudaSlice<u8>) -> Self {
        DevBuf { s }
    }

    /// The device address of byte `offset`.
    pub fn at(&self, offset: usize) -> u64 {
        let (p, _sync) = self.s.device_ptr(self.s.stream());
        p + offset as u64
    }
    pub fn ptr(&self) -> u64 {
        self.at(0)
    }
    pub fn len(&self) -> usize {
        self.s.len()
    }
    pub fn is_empty(&self) -> bool {
        self.s.len() == 0
    }
}

impl GpuDevice {
    /// Uninitialised device memory of `bytes` (at least 1 byte is allocated).
    pub fn alloc(&self, bytes: usize, what: &str) -> Result<DevBuf> {
        // SAFETY: the memory is written by a kernel or a copy before it is read.
        let s = unsafe { self.stream.alloc::<u8>(bytes.max(1)) }
            .map_err(|e| backend_err(format!("allocating {bytes} bytes for {what}: {e:?}")))?;
        Ok(DevBuf { s })
    }

    pub fn alloc_zeroed(&self, bytes: usize, what: &str) -> Result<DevBuf> {
        let mut b = self.alloc(bytes, what)?;
        self.stream
            .memset_zeros(&mut b.s)
            .map_err(|e| backend_err(format!("zeroing {what}: {e:?}")))?;
        Ok(b)
    }

    pub fn zero(&self, b: &mut DevBuf, what: &str) -> Result<()> {
        self.stream
            .memset_zeros(&mut b.s)
            .map_err(|e| backend_err(format!("zeroing {what}: {e:?}")))
    }

    pub fn upload(&self, bytes: &[u8], what: &str) -> Result<DevBuf> {
        let mut b = self.alloc(bytes.len(), what)?;
        self.upload_into(&mut b, 0, bytes, what)?;
        Ok(b)
    }

    pub fn upload_into(
        &self,
        b: &mut DevBuf,
        offset: usize,
        bytes: &[u8],
        what: &str,
    ) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if offset + bytes.len() > b.len() {
            return Err(backend_err(format!(
                "upload of {what}: {} bytes at {offset} exceed the buffer's {}",
                bytes.len(),
                b.len()
            )));
        }
        let mut view = b.s.slice_mut(offset..offset + bytes.len());
        self.stream
            .memcpy_htod(bytes, &mut view)
            .map_err(|e| backend_err(format!("upload of {what}: {e:?}")))
    }

    /// Copies `out.len()` bytes from byte `offset` of `b` and waits for them.
    pub fn download(&self, b: &DevBuf, offset: usize, out: &mut [u8], what: &str) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        if offset + out.len() > b.len() {
            return Err(backend_err(format!(
                "download of {what}: {} bytes at {offset} exceed the buffer's {}",
                out.len(),
                b.len()
            )));
        }
        let view = b.s.slice(offset..offset + out.len());
        self.stream
            .memcpy_dtoh(&view, out)
            .map_err(|e| backend_err(format!("download of {what}: {e:?}")))?;
        self.sync(what)
    }
}

impl GpuDevice {
    /// Fills `b` with copies of its first `unit` bytes (doubling device-to-device copies); used to
    /// tile a few thousand random points into a large benchmark input.
    pub fn tile(&self, b: &mut DevBuf, unit: usize, what: &str) -> Result<()> {
        let total = b.len();
        let mut filled = unit.min(total);
        while filled < total {
            let len = filled.min(total - filled);
            // SAFETY: both ranges lie inside `b` and do not overlap ([0, len) and [filled, filled+len)).
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    b.at(filled),
                    b.at(0),
                    len,
                    self.stream.cu_stream(),
                )
            }
            .map_err(|e| backend_err(format!("tiling {what}: {e:?}")))?;
            filled += len;
        }
        Ok(())
    }
}

/// Page-locked host memory for uploads at full PCIe speed.
pub struct PinnedBuf {
    p: cudarc::driver::PinnedHostSlice<u8>,
}

impl PinnedBuf {
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8]> {
        self.p
            .as_mut_slice()
            .map_err(|e| backend_err(format!("pinned host buffer: {e:?}")))
    }
    pub fn len(&self) -> usize {
        self.p.len()
    }
    pub fn is_empty(&self) -> bool {
        self.p.len() == 0
    }
}

impl GpuDevice {
    pub fn alloc_pinned(&self, bytes: usize, what: &str) -> Result<PinnedBuf> {
        // SAFETY: the memory is written before it is read (callers fill it first).
        let p = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
            .map_err(|e| backend_err(format!("pinning {bytes} host bytes for {what}: {e:?}")))?;
        Ok(PinnedBuf { p })
    }

    /// Asynchronous copy of all of `src` to the start of `b`.
    pub fn upload_pinned(&self, b: &mut DevBuf, src: &PinnedBuf, what: &str) -> Result<()> {
        if src.len() > b.len() {
            return Err(backend_err(format!(
                "upload of {what}: {} bytes exceed the buffer's {}",
                src.len(),
                b.len()
            )));
        }
        let mut view = b.s.slice_mut(0..src.len());
        self.stream
            .memcpy_htod(&src.p, &mut view)
            .map_err(|e| backend_err(format!("upload of {what}: {e:?}")))
    }
}
