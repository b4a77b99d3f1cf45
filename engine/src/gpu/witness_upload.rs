//! Scalar vectors that are almost all zeros and ones, uploaded packed and unpacked on the device
//! (`unpack_witness`, cuda-src/witness.cu): a bitmap of the ones, a bitmap of the other nonzero
//! values, each word's rank among the latter and their values.
//!
//! - The streamed tier's witness, `inputs ++ aux`, where `prepare` packed it
//!   (`packed_witness.rs`: ~2 % of a PoRep witness's bytes); else uploaded whole through the
//!   copy ring.
//! - A query's tail scalars (its ones zero; ~1 % of a PoRep tail nonzero), from its gather plan's
//!   bitmap (`gather.rs`): where the bases stream straight from registered memory, the tails'
//!   dense vectors (4.2 GB a query at 32 GiB) would otherwise cross the ring in full.

use blstrs::Scalar;

use super::buf::DevBuf;
use super::ring::Ring;
use super::{as_bytes, PipelinedGpu, Result};
use crate::gather::Gather;
use crate::prover::{Recorded, Split};

/// A packed vector of `len` scalars: `ones` (`None`: no ones), `others`, `ranks`, `values`.
struct Packed<'a> {
    len: usize,
    ones: Option<&'a [u64]>,
    others: &'a [u64],
    ranks: &'a [u32],
    values: &'a [Scalar],
}

impl PipelinedGpu {
    /// `r`'s witness in a device buffer of its own, queued on the copy stream (the kernels wait
    /// for the copy stream before they read it).
    pub(super) fn upload_witness(&self, ring: &mut Ring, r: &Recorded) -> Result<DevBuf> {
        let cp = &self.stream_copy;
        let cols = r.inputs.len() + r.aux.len();
        if let Some(p) = r.packed.as_ref().filter(|p| p.len == cols && cols > 0) {
            let packed = Packed {
                len: cols,
                ones: Some(&p.ones),
                others: &p.others,
                ranks: &p.ranks,
                values: &p.values,
            };
            return self.unpack_upload(ring, &packed, "witness");
        }
        let mut w = cp.alloc(32 * cols.max(1), "witness")?;
        ring.upload(cp, &mut w, 0, as_bytes(&r.inputs), "witness inputs")?;
        let at = 32 * r.inputs.len();
        ring.upload(cp, &mut w, at, as_bytes(&r.aux), "witness aux")?;
        Ok(w)
    }

    /// `split`'s tail scalars (zero where it is one) in a device buffer of their own, packed by
    /// its plan `g`, queued on the copy stream.
    pub(super) fn upload_packed_tail(
        &self,
        ring: &mut Ring,
        split: &Split,
        g: &Gather,
        what: &str,
    ) -> Result<DevBuf> {
        let values = g.tail_values(split);
        let ranks = g.tail_ranks();
        let packed = Packed {
            len: split.len(),
            ones: None,
            others: g.nonzero_words(),
            ranks: &ranks,
            values: &values,
        };
        self.unpack_upload(ring, &packed, what)
    }

    /// `bytes` in a device buffer of their own (at least 32 bytes), queued on the copy stream
    /// through the ring.
    pub(super) fn upload_new(&self, ring: &mut Ring, bytes: &[u8], what: &str) -> Result<DevBuf> {
        let cp = &self.stream_copy;
        let mut b = cp.alloc(bytes.len().max(32), what)?;
        ring.upload(cp, &mut b, 0, bytes, what)?;
        Ok(b)
    }

    fn unpack_upload(&self, ring: &mut Ring, p: &Packed, what: &str) -> Result<DevBuf> {
        let cp = &self.stream_copy;
        let words = p.len.div_ceil(64);
        if p.others.len() != words
            || p.ranks.len() != words
            || p.ones.is_some_and(|o| o.len() != words)
        {
            return Err(super::backend_err(format!(
                "packed {what}: bitmaps of {} and ranks of {} words for {} scalars",
                p.others.len(),
                p.ranks.len(),
                p.len
            )));
        }
        let w = cp.alloc(32 * p.len.max(1), what)?;
        if p.len == 0 {
            return Ok(w);
        }
        let mut part = |bytes: &[u8]| self.upload_new(ring, bytes, what);
        let ones = match p.ones {
            Some(o) => part(as_bytes(o))?,
            None => cp.alloc_zeroed(8 * words, what)?,
        };
        let others = part(as_bytes(p.others))?;
        let ranks = part(as_bytes(p.ranks))?;
        let values = part(as_bytes(p.values))?;
        let n = p.len as u64;
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
