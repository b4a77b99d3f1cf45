//! The streamed tier's products on the device (`StreamTier::device_products`, the recording's
//! matrices not resident): the witness uploaded, each matrix streamed in row pieces through two
//! piece buffers (`spmv_rows` over a piece's rows as soon as its copy is done), and the H step
//! run around them so that at most two of `a, b, c` live at once:
//!
//! 1. `a = A·w`, `b = B·w`; where the rows are checked, `C·w` piece by piece into a buffer of
//!    one piece's rows, each piece's rows checked against `a·b` there (`spmv_unsatisfied`);
//! 2. `a` and `b` to the coset, `a = a·b` (`h::to_coset`, `h::product`);
//! 3. `c = C·w` into `b`'s buffer; the witness and the piece buffers freed;
//! 4. `c`'s and `a`'s inverse transforms, and H's coefficients into a third buffer
//!    (`h::finish`).
//!
//! The peak is the domain, the witness, two domains of products and the pieces (14.9 GiB at
//! 32 GiB PoRep: a 16 GiB card's budget holds it; `stream_plan` counts it).

use blstrs::Scalar;
use cudarc::driver::CudaEvent;
use ff::Field;

use super::buf::DevBuf;
use super::h::{self, HDomain};
use super::ring::Ring;
use super::streamed::Busy;
use super::{as_bytes, as_bytes_mut, backend_err, PipelinedGpu, Result};
use crate::prover::{unsatisfied, Recorded};
use crate::recorded::{coeff, Recording};

/// Rows `lo..hi` of a matrix, entries `e0..e1`: one streamed piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub lo: usize,
    pub hi: usize,
    pub e0: usize,
    pub e1: usize,
}

/// A matrix's rows (`row_ptr`, as a `Recording` holds it) cut into pieces of at most `piece`
/// entries and `piece` rows, each at least one row; a row longer than a piece is refused (no
/// recorded circuit has one).
pub fn pieces(row_ptr: &[u64], piece: u64, m: usize) -> Result<Vec<Piece>> {
    let rows = row_ptr.len().saturating_sub(1);
    let mut out = Vec::new();
    let mut lo = 0usize;
    while lo < rows {
        let limit = row_ptr[lo] + piece;
        let fits = row_ptr[lo + 1..=rows].partition_point(|&e| e <= limit);
        let hi = (lo + fits).min(lo + piece as usize).max(lo + 1);
        let (e0, e1) = (row_ptr[lo] as usize, row_ptr[hi] as usize);
        if e1 - e0 > piece as usize {
            return Err(backend_err(format!(
                "recorded row {lo} of matrix {m} has {} entries, more than a piece ({piece})",
                e1 - e0
            )));
        }
        out.push(Piece { lo, hi, e0, e1 });
        lo = hi;
    }
    Ok(out)
}

/// The witness, the coefficient table and the two piece buffers on the device, while the
/// matrices stream.
struct Matrices<'r> {
    rec: &'r Recording,
    w: DevBuf,
    table: DevBuf,
    ptrs: [DevBuf; 2],
    ents: [DevBuf; 2],
    /// The kernels still reading piece buffer `j`.
    read: [Option<CudaEvent>; 2],
    k: usize,
    piece: u64,
    /// The recording's host image is registered: pieces are copied straight from it.
    pinned: bool,
}

impl PipelinedGpu {
    /// H's coefficients (natural order, `n` of them) of the recorded partition `r`, its products
    /// computed on the device with the matrices streamed in pieces of at most `piece` entries
    /// (see the module documentation); every row's `a·b = c` checked where `r` asks it.
    /// `pinned`: the recording's host image is registered (its pieces copied straight from it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn h_from_streamed_products(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        r: &Recorded,
        d: &HDomain,
        piece: u64,
        pinned: bool,
        index: usize,
    ) -> Result<DevBuf> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let n = 1usize << d.log_n;
        let mut ms = self.open_matrices(ring, r, piece, pinned)?;
        let a = cp.alloc_zeroed(32 * n, "recorded products")?;
        let mut b = cp.alloc_zeroed(32 * n, "recorded products")?;
        self.spmv(ring, busy, &mut ms, 0, |p| a.at(32 * p.lo), |_, _| Ok(()))?;
        self.spmv(ring, busy, &mut ms, 1, |p| b.at(32 * p.lo), |_, _| Ok(()))?;
        if r.check_satisfied {
            self.check_rows(ring, busy, &mut ms, (&a, &b), r, index)?;
        }
        let k0 = dev.mark()?;
        h::to_coset(dev, d, a.ptr())?;
        h::to_coset(dev, d, b.ptr())?;
        h::product(dev, d, a.ptr(), b.ptr())?;
        busy.spans.push((k0, dev.mark()?));
        // c into b's buffer, zeroed once the kernels are past the product.
        cp.stream
            .wait(&dev.mark()?)
            .map_err(|e| backend_err(format!("copy stream waiting for the kernels: {e:?}")))?;
        cp.zero(&mut b, "recorded products")?;
        self.spmv(ring, busy, &mut ms, 2, |p| b.at(32 * p.lo), |_, _| Ok(()))?;
        let Matrices {
            w,
            table,
            ptrs: [p0, p1],
            ents: [e0, e1],
            ..
        } = ms;
        self.free_after_kernels(vec![w, table, p0, p1, e0, e1])?;
        // H's coefficients into a buffer of their own, allocated after those frees.
        let out = cp.alloc(32 * n, "H coefficients")?;
        dev.stream
            .wait(&cp.mark()?)
            .map_err(|e| backend_err(format!("kernels waiting for H's buffer: {e:?}")))?;
        let k0 = dev.mark()?;
        h::finish(dev, d, out.ptr(), a.ptr(), b.ptr())?;
        busy.spans.push((k0, dev.mark()?));
        self.free_after_kernels(vec![a, b])?;
        Ok(out)
    }

    /// The witness (`inputs ++ aux`), the table and two piece buffers of `piece` entries.
    fn open_matrices<'r>(
        &self,
        ring: &mut Ring,
        r: &'r Recorded,
        piece: u64,
        pinned: bool,
    ) -> Result<Matrices<'r>> {
        let cp = &self.stream_copy;
        let w = self.upload_witness(ring, r)?;
        let table_host = as_bytes(r.rec.table());
        let mut table = cp.alloc(table_host.len().max(32), "recorded coefficients")?;
        ring.upload_from(
            cp,
            &mut table,
            0,
            table_host,
            pinned,
            "recorded coefficients",
        )?;
        let bytes = 8 * (piece as usize + 1);
        Ok(Matrices {
            rec: &r.rec,
            w,
            table,
            ptrs: [
                cp.alloc(bytes, "row pointers")?,
                cp.alloc(bytes, "row pointers")?,
            ],
            ents: [cp.alloc(bytes, "entries")?, cp.alloc(bytes, "entries")?],
            read: [None, None],
            k: 0,
            piece,
            pinned,
        })
    }

    /// Matrix `m` times the witness, piece by piece: each piece's pointers and entries copied
    /// into one of the two piece buffers while the kernels work on the other, then `spmv_rows`
    /// writing row `lo` of the piece at address `dest(piece)` on, then `after(i, piece)` (more
    /// kernels on the piece's rows).
    fn spmv(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        ms: &mut Matrices,
        m: usize,
        dest: impl Fn(&Piece) -> u64,
        mut after: impl FnMut(usize, &Piece) -> Result<()>,
    ) -> Result<()> {
        let dev = &self.kernels;
        let cp = &self.stream_copy;
        let rp = ms.rec.row_ptr(m);
        let ent = ms.rec.entries(m);
        for (i, p) in pieces(rp, ms.piece, m)?.iter().enumerate() {
            let j = ms.k % 2;
            ms.k += 1;
            if let Some(ev) = ms.read[j].take() {
                cp.stream.wait(&ev).map_err(|e| {
                    backend_err(format!("copy stream waiting for the products: {e:?}"))
                })?;
            }
            let rows = &rp[p.lo..=p.hi];
            let pinned = ms.pinned;
            ring.upload_from(
                cp,
                &mut ms.ptrs[j],
                0,
                as_bytes(rows),
                pinned,
                "row pointers",
            )?;
            let ents = as_bytes(&ent[p.e0..p.e1]);
            ring.upload_from(cp, &mut ms.ents[j], 0, ents, pinned, "entries")?;
            dev.stream
                .wait(&cp.mark()?)
                .map_err(|e| backend_err(format!("kernels waiting for a matrix piece: {e:?}")))?;
            let k0 = dev.mark()?;
            let count = (p.hi - p.lo) as u64;
            // The piece's pointers are absolute: its entries' buffer is addressed as if it
            // began at entry 0.
            let ent_base = ms.ents[j].ptr().wrapping_sub(8 * p.e0 as u64);
            crate::gpu_launch!(
                dev,
                "spmv_rows",
                super::device::grid(count, 256),
                &dest(p),
                &ms.ptrs[j].ptr(),
                &ent_base,
                &ms.table.ptr(),
                &ms.w.ptr(),
                &count
            )?;
            after(i, p)?;
            busy.spans.push((k0, dev.mark()?));
            ms.read[j] = Some(dev.mark()?);
        }
        Ok(())
    }

    /// Every row's `a·b = c`, `c` made piece by piece into a buffer of one piece's rows and
    /// checked there; the first row that fails is an `Unsatisfied` error (its `c` evaluated on
    /// the host).
    fn check_rows(
        &self,
        ring: &mut Ring,
        busy: &mut Busy,
        ms: &mut Matrices,
        (a, b): (&DevBuf, &DevBuf),
        r: &Recorded,
        index: usize,
    ) -> Result<()> {
        let dev = &self.kernels;
        let cut = pieces(ms.rec.row_ptr(2), ms.piece, 2)?;
        let Some(most) = cut.iter().map(|p| p.hi - p.lo).max() else {
            return Ok(());
        };
        // One result a piece, each starting at its row count (no row failed).
        let counts: Vec<u64> = cut.iter().map(|p| (p.hi - p.lo) as u64).collect();
        let first = dev.upload(as_bytes(&counts), "row check results")?;
        let c = dev.alloc(32 * most, "checked rows")?;
        self.spmv(
            ring,
            busy,
            ms,
            2,
            |_| c.ptr(),
            |i, p| {
                let rows = (p.hi - p.lo) as u64;
                crate::gpu_launch!(
                    dev,
                    "spmv_unsatisfied",
                    super::device::grid(rows, 256),
                    &first.at(8 * i),
                    &a.at(32 * p.lo),
                    &b.at(32 * p.lo),
                    &c.ptr(),
                    &rows
                )
            },
        )?;
        let mut got = vec![0u64; cut.len()];
        dev.download(&first, 0, as_bytes_mut(&mut got), "row check results")?;
        let failed = cut
            .iter()
            .zip(&got)
            .find(|(p, g)| **g < (p.hi - p.lo) as u64);
        if let Some((p, g)) = failed {
            let row = p.lo + *g as usize;
            let mut v = [Scalar::ZERO; 2];
            for (buf, out) in [a, b].into_iter().zip(v.iter_mut()) {
                dev.download(
                    buf,
                    32 * row,
                    as_bytes_mut(std::slice::from_mut(out)),
                    "unsatisfied row",
                )?;
            }
            let c = row_value(ms.rec, 2, row, &r.inputs, &r.aux);
            return Err(unsatisfied(index, row, &v[0], &v[1], &c));
        }
        Ok(())
    }
}

/// Row `row` of matrix `m` times the witness, on the host.
fn row_value(rec: &Recording, m: usize, row: usize, inputs: &[Scalar], aux: &[Scalar]) -> Scalar {
    let mut acc = Scalar::ZERO;
    for &e in rec.row(m, row) {
        let col = (e & 0xffff_ffff) as usize;
        let v = match col.checked_sub(inputs.len()) {
            None => inputs[col],
            Some(j) => aux.get(j).copied().unwrap_or(Scalar::ZERO),
        };
        coeff::accumulate(&mut acc, v, (e >> 32) as u32, rec.table());
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_row_once_within_the_piece_size() {
        // Rows of 0..5 entries.
        let mut rp = vec![0u64];
        for r in 0..1000u64 {
            rp.push(rp.last().unwrap() + r % 6);
        }
        for piece in [5u64, 7, 64, 1 << 20] {
            let cut = pieces(&rp, piece, 0).unwrap();
            assert_eq!(cut.first().unwrap().lo, 0);
            assert_eq!(cut.last().unwrap().hi, 1000);
            for w in cut.windows(2) {
                assert_eq!(w[0].hi, w[1].lo);
            }
            for p in &cut {
                assert!(p.hi > p.lo && (p.hi - p.lo) as u64 <= piece);
                assert!((p.e1 - p.e0) as u64 <= piece, "{p:?}");
                assert_eq!((p.e0, p.e1), (rp[p.lo] as usize, rp[p.hi] as usize));
            }
        }
        // A row longer than a piece is refused, and names its row.
        let e = pieces(&[0, 3, 10], 5, 1).unwrap_err().to_string();
        assert!(e.contains("row 1 of matrix 1"), "{e}");
    }
}
