//! cuzk-srs: Filecoin Groth16 parameter files.
//!
//! - [`Layout::parse`] validates a file's structure before anything is decoded;
//! - [`Srs::open`] decodes the points in parallel into the blst/blstrs in-memory layout and keeps
//!   a decode cache beside the file (or in a configured directory), so the next open is an mmap;
//! - [`write_params`] writes parameter files in the same format (bellperson reads them).

mod cache;
mod decode;
mod error;
pub mod layout;
pub mod point;
mod srs;
mod write;

pub use decode::decoded_section_points_total;
pub use error::{PointProblem, SrsError};
pub use layout::{Layout, Section};
pub use srs::{
    cache_path, cache_path_beside, inspect, CacheMode, CacheState, OpenOptions, Origin, Srs,
};
pub use write::{write_params, ParamsRef};
