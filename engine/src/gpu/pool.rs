//! The device's memory pool: cudarc allocates every device buffer from it (`cuMemAllocAsync` on
//! the buffer's stream), so it is the backend's one allocator. By default the driver hands freed
//! pool memory back to the device at every synchronisation (release threshold 0), so each
//! partition would map its buffers afresh and unmap them again; cuzk keeps what the pool has
//! reserved (the VRAM budget bounds it) and trims only on purpose, e.g. when a resident SRS is
//! replaced.

use cudarc::driver::{sys, CudaContext};

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
            "memory pool's reserved bytes on GPU {}: {e:?}",
            ctx.ordinal()
        ))
    })?;
    Ok(bytes)
}

/// The device's memory now: free and total from `cuMemGetInfo`, this process's pool as `ours`.
pub fn memory(ctx: &CudaContext) -> Result<crate::backend::DeviceMemory> {
    ctx.bind_to_thread()
        .map_err(|e| backend_err(format!("binding GPU {}: {e:?}", ctx.ordinal())))?;
    let (free, total) = ctx
        .mem_get_info()
        .map_err(|e| backend_err(format!("cuMemGetInfo on GPU {}: {e:?}", ctx.ordinal())))?;
    Ok(crate::backend::DeviceMemory {
        free: free as u64,
        total: total as u64,
        ours: reserved(ctx)?,
    })
}
