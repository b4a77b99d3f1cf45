//! The streamed tier's witness on the device: `inputs ++ aux`, uploaded packed where the GPU's
//! uploader packed it (`packed_witness.rs`: two bitmaps, the ranks and the values that are
//! neither zero nor one, ~2 % of a PoRep witness's bytes) and unpacked there on the copy stream
//! (`unpack_witness`), else uploaded whole through the copy ring.

use super::buf::DevBuf;
use super::ring::Ring;
use super::{as_bytes, PipelinedGpu, Result};
use crate::prover::Recorded;

impl PipelinedGpu {
    /// `r`'s witness in a device buffer of its own, queued on the copy stream (the kernels wait
    /// for the copy stream before they read it).
    pub(super) fn upload_witness(&self, ring: &mut Ring, r: &Recorded) -> Result<DevBuf> {
        let cp = &self.stream_copy;
        let cols = r.inputs.len() + r.aux.len();
        let mut w = cp.alloc(32 * cols.max(1), "witness")?;
        let Some(p) = r.packed.as_ref().filter(|p| p.len == cols && cols > 0) else {
            ring.upload(cp, &mut w, 0, as_bytes(&r.inputs), "witness inputs")?;
            let at = 32 * r.inputs.len();
            ring.upload(cp, &mut w, at, as_bytes(&r.aux), "witness aux")?;
            return Ok(w);
        };
        let mut part = |bytes: &[u8], what: &str| -> Result<DevBuf> {
            let mut b = cp.alloc(bytes.len().max(32), what)?;
            ring.upload(cp, &mut b, 0, bytes, what)?;
            Ok(b)
        };
        let ones = part(as_bytes(&p.ones), "packed witness ones")?;
        let others = part(as_bytes(&p.others), "packed witness others")?;
        let ranks = part(as_bytes(&p.ranks), "packed witness ranks")?;
        let values = part(as_bytes(&p.values), "packed witness values")?;
        let n = cols as u64;
        crate::gpu_launch!(
            cp,
            "unpack_witness",
            super::device::grid(n, 256),
            &w.ptr(),
            &ones.ptr(),
            &others.ptr(),
            &ranks.ptr(),
            &values.ptr(),
            &n
        )?;
        // Freed on the copy stream, after the kernel that reads them.
        drop((ones, others, ranks, values));
        Ok(w)
    }
}
