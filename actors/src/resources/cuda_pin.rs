//! Pinning through the CUDA driver, for the HostPinner on a GPU machine: `cuMemHostRegister`
//! (portable, so every context sees the pages as pinned) and `cuMemHostUnregister`.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};

use crate::resources::pinner::PinApi;

pub struct CudaPin {
    ctx: Arc<CudaContext>,
}

impl CudaPin {
    pub fn new(ctx: Arc<CudaContext>) -> Self {
        CudaPin { ctx }
    }
}

impl PinApi for CudaPin {
    fn register(&mut self, addr: usize, len: usize) -> Result<(), String> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("binding the CUDA context: {e:?}"))?;
        // SAFETY: the HostPinner registers only page-rounded ranges of live host buffers that
        // it never registered before, and unregisters them before they can be freed (leases).
        let r = unsafe {
            sys::cuMemHostRegister_v2(
                addr as *mut std::ffi::c_void,
                len,
                sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemHostRegister({addr:#x}, {len} bytes): {r:?}"));
        }
        Ok(())
    }

    fn unregister(&mut self, addr: usize) -> Result<(), String> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("binding the CUDA context: {e:?}"))?;
        // SAFETY: `addr` is the start of a registration made by `register`.
        let r = unsafe { sys::cuMemHostUnregister(addr as *mut std::ffi::c_void) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemHostUnregister({addr:#x}): {r:?}"));
        }
        Ok(())
    }
}
