//! The CUDA backend: BLS12-381 kernels in `cuda-src/`, compiled at run time by NVRTC for the GPU
//! that is present, and [`GpuBackend`], the engine's [`crate::backend::Backend`] on top of them
//! (call by call; its [`crate::pipeline::Pipeline`] is the host defaults but for its memory).
//! [`PipelinedGpu`] is the [`crate::pipeline::Pipeline`] the actor pipeline drives (`staged.rs`).

pub mod backend;
pub mod batch_add;
pub mod bench;
mod bench_h2d;
pub mod buf;
pub mod copy_pieces;
pub mod device;
pub mod fixed_base;
pub mod fold;
pub mod h;
pub mod msm;
pub mod msm_plan;
pub mod ntt;
pub mod nvrtc;
pub mod points;
pub mod pool;
mod ring;
pub mod sources;
pub mod spmv;
pub mod staged;
pub mod stream_plan;
pub mod streamed;
pub mod streamed_gather;
pub mod streamed_overlap;
pub mod streamed_products;
mod witness_upload;

pub use backend::GpuBackend;
pub use device::{probe, GpuDevice};
pub use staged::PipelinedGpu;

use crate::error::EngineError;

pub type Result<T> = std::result::Result<T, EngineError>;

/// An error of the CUDA backend that names what failed.
pub fn backend_err(what: impl Into<String>) -> EngineError {
    EngineError::Backend {
        backend: "cuda".into(),
        what: what.into(),
    }
}

/// The bytes of a slice of plain-old-data values (blstrs field and point types are
/// `repr(transparent)` over blst's C structs, with no padding).
pub fn as_bytes<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: T is Copy plain data; the byte view covers exactly the slice.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

/// Mutable bytes of a slice of plain-old-data values; callers write only valid bit patterns of
/// `T` (device results of the same type).
pub fn as_bytes_mut<T: Copy>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}
