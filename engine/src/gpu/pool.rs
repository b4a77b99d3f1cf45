//! The device's memory pool: cudarc allocates every device buffer from it (`cuMemAllocAsync` on
//! the buffer's stream), so it is the backend's one allocator. By default the driver hands freed
//! pool memory back to the device at every synchronisation (release threshold 0), so each
//! partition would map its buffers afresh and unmap them again; cuzk keeps what the pool has
//! reserved (the VRAM budget bounds it) and trims only on purpose, e.g. when a resident SRS is
//! replaced. The resident SRS bases come from a pool of their own (`OwnPool`), which keeps
//! nothing freed: evicting them gives their memory back whole.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};

use super::{backend_err, Result};

fn default_pool(ctx: &CudaContext) -> Result<Option<sys::CUmemoryPool>> {
    if !ctx.has_async_alloc() {
        return Ok(None); // cudarc uses plain cuMemAlloc then; there is no pool to keep
    }
    ctx.bind_to_thread()
        .map_err(|e| backend_err(format!("binding GPU {}: {e:?}", ctx.ordinal())))?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: out-parameter for the device's default pool.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .map_err(|e| {
            backend_err(format!(
                "default memory pool of GPU {}: {e:?}",
                ctx.ordinal()
            ))
        })?;
    Ok(Some(pool))
}

/// Keeps freed memory in the pool (release threshold: unlimited), and forbids the pool to make
/// one stream wait for another in order to reuse memory freed there (otherwise an upload on the
/// copy stream may be made to wait for the kernel stream, which would serialise upload behind
/// compute; the pool grows instead, within the VRAM budget).
pub fn keep(ctx: &CudaContext) -> Result<()> {
    let Some(pool) = default_pool(ctx)? else {
        return Ok(());
    };
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the attribute takes a pointer to a u64.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut std::ffi::c_void,
        )
    }
    .result()
    .map_err(|e| {
        backend_err(format!(
            "memory pool release threshold on GPU {}: {e:?}",
            ctx.ordinal()
        ))
    })?;
    let mut no: i32 = 0;
    // SAFETY: the attribute takes a pointer to an int.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            &mut no as *mut i32 as *mut std::ffi::c_void,
        )
    }
    .result()
    .map_err(|e| {
        backend_err(format!(
            "memory pool reuse policy on GPU {}: {e:?}",
            ctx.ordinal()
        ))
    })
}

/// Hands the pool's unused memory back to the device, keeping at most `keep_bytes` reserved.
/// Memory freed on a stream returns to the pool only once the stream has passed the free, so
/// callers synchronise first.
pub fn trim(ctx: &CudaContext, keep_bytes: usize) -> Result<()> {
    let Some(pool) = default_pool(ctx)? else {
        return Ok(());
    };
    // SAFETY: a valid pool handle.
    unsafe { sys::cuMemPoolTrimTo(pool, keep_bytes) }
        .result()
        .map_err(|e| {
            backend_err(format!(
                "trimming the memory pool of GPU {}: {e:?}",
                ctx.ordinal()
            ))
        })
}

/// Bytes the device's default pool holds from the device now (used by live buffers or kept for
/// reuse): this process's share of the device's used memory. 0 without a pool.
pub fn reserved(ctx: &CudaContext) -> Result<u64> {
    let Some(pool) = default_pool(ctx)? else {
        return Ok(0);
    };
    pool_reserved(pool, ctx.ordinal())
}

fn pool_reserved(pool: sys::CUmemoryPool, ordinal: usize) -> Result<u64> {
    let mut bytes: u64 = 0;
    // SAFETY: the attribute writes a u64 (cuuint64_t).
    unsafe {
        sys::cuMemPoolGetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            &mut bytes as *mut u64 as *mut std::ffi::c_void,
        )
    }
    .result()
    .map_err(|e| {
        backend_err(format!(
            "memory pool's reserved bytes on GPU {ordinal}: {e:?}"
        ))
    })?;
    Ok(bytes)
}

/// The device's memory now: free and total from `cuMemGetInfo`, this process's pool as `ours`.
pub fn memory(ctx: &CudaContext) -> Result<crate::pipeline::DeviceMemory> {
    ctx.bind_to_thread()
        .map_err(|e| backend_err(format!("binding GPU {}: {e:?}", ctx.ordinal())))?;
    let (free, total) = ctx
        .mem_get_info()
        .map_err(|e| backend_err(format!("cuMemGetInfo on GPU {}: {e:?}", ctx.ordinal())))?;
    Ok(crate::pipeline::DeviceMemory {
        free: free as u64,
        total: total as u64,
        ours: reserved(ctx)?,
    })
}

/// A memory pool of its own, for one long-lived set of buffers (the resident SRS bases): nothing
/// short-lived shares its chunks, and it keeps nothing freed (release threshold 0), so once its
/// buffers are freed and the stream has passed the frees, all of its memory is the device's
/// again. Buffers come from it through `alloc` and go back by cudarc's `cuMemFreeAsync`.
pub struct OwnPool {
    pool: sys::CUmemoryPool,
    ordinal: usize,
}

// SAFETY: a pool handle is a driver object usable from any thread of the process.
unsafe impl Send for OwnPool {}
// SAFETY: as above; the driver synchronises its use.
unsafe impl Sync for OwnPool {}

impl OwnPool {
    /// A new pool on `ctx`'s device, or `None` where the device has no stream-ordered allocator
    /// (cudarc then allocates with plain `cuMemAlloc`, which gives memory back at every free).
    pub fn new(ctx: &CudaContext) -> Result<Option<Self>> {
        if !ctx.has_async_alloc() {
            return Ok(None);
        }
        ctx.bind_to_thread()
            .map_err(|e| backend_err(format!("binding GPU {}: {e:?}", ctx.ordinal())))?;
        // SAFETY: plain C struct; all-zero is "no handle types, no limit, default usage".
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ctx.cu_device();
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-parameter and a filled-in properties struct.
        unsafe { sys::cuMemPoolCreate(&mut pool, &props) }
            .result()
            .map_err(|e| {
                backend_err(format!(
                    "creating a memory pool on GPU {}: {e:?}",
                    ctx.ordinal()
                ))
            })?;
        Ok(Some(OwnPool {
            pool,
            ordinal: ctx.ordinal(),
        }))
    }

    /// `bytes` of uninitialised memory from this pool, ordered on `stream` (at least 1 byte).
    ///
    /// # Safety
    /// The memory must be written before it is read.
    pub unsafe fn alloc(
        &self,
        stream: &Arc<CudaStream>,
        bytes: usize,
        what: &str,
    ) -> Result<CudaSlice<u8>> {
        let bytes = bytes.max(1);
        stream
            .context()
            .bind_to_thread()
            .map_err(|e| backend_err(format!("binding GPU {}: {e:?}", self.ordinal)))?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-parameter, a live pool and stream of the same device.
        unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.pool, stream.cu_stream()) }
            .result()
            .map_err(|e| {
                backend_err(format!(
                    "allocating {bytes} bytes for {what} on GPU {}: {e:?}",
                    self.ordinal
                ))
            })?;
        // SAFETY: `ptr` is a fresh allocation of `bytes` bytes; the slice frees it on its
        // stream when dropped (cuMemFreeAsync returns it to this pool).
        Ok(unsafe { stream.upgrade_device_ptr::<u8>(ptr, bytes) })
    }

    /// Bytes this pool holds from the device now.
    pub fn reserved(&self) -> Result<u64> {
        pool_reserved(self.pool, self.ordinal)
    }
}

impl Drop for OwnPool {
    fn drop(&mut self) {
        // With allocations outstanding the driver destroys the pool once they are freed.
        // SAFETY: a pool created by `new`, destroyed once.
        let _ = unsafe { sys::cuMemPoolDestroy(self.pool) };
    }
}
