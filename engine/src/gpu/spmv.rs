//! The recorded products on the device: a [`Recording`]'s matrices uploaded once and kept
//! resident ([`DeviceRecording`]), then per proof only the witness is uploaded and `spmv_rows`
//! (cuda-src/spmv.cu) computes `a`, `b`, `c` into buffers of the domain's size, zero past the
//! recorded rows (as `prepare` pads them), ready for the H step; `spmv_unsatisfied` checks every
//! row's `a·b = c` there.

use blstrs::Scalar;

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::{as_bytes, as_bytes_mut, backend_err, Result};
use crate::gpu_launch;
use crate::recorded::Recording;

/// A recording's matrices on one GPU.
pub struct DeviceRecording {
    ptr: [DevBuf; 3],
    ent: [DevBuf; 3],
    table: DevBuf,
    rows: u64,
    inputs: usize,
    aux: usize,
}

impl DeviceRecording {
    /// Uploads the row pointers, entries and table of `rec`.
    pub fn upload(dev: &GpuDevice, rec: &Recording) -> Result<DeviceRecording> {
        let up = |m: usize| -> Result<(DevBuf, DevBuf)> {
            Ok((
                dev.upload(as_bytes(rec.row_ptr(m)), "recorded row pointers")?,
                dev.upload(as_bytes(rec.entries(m)), "recorded entries")?,
            ))
        };
        let ((pa, ea), (pb, eb), (pc, ec)) = (up(0)?, up(1)?, up(2)?);
        let table = dev.upload(as_bytes(rec.table()), "recorded coefficients")?;
        let c = rec.counts();
        Ok(DeviceRecording {
            ptr: [pa, pb, pc],
            ent: [ea, eb, ec],
            table,
            rows: c.rows() as u64,
            inputs: c.inputs,
            aux: c.aux,
        })
    }

    /// Device bytes the matrices hold (for the VRAM budget).
    pub fn bytes(&self) -> u64 {
        self.ptr
            .iter()
            .chain(&self.ent)
            .chain([&self.table])
            .map(|b| b.len() as u64)
            .sum()
    }

    /// Uploads a witness as one buffer, `inputs ++ aux` (the column order of the matrices).
    pub fn upload_witness(
        &self,
        dev: &GpuDevice,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Result<DevBuf> {
        if inputs.len() != self.inputs || aux.len() != self.aux {
            return Err(backend_err(format!(
                "witness of {} inputs and {} aux for a recording of {} and {}",
                inputs.len(),
                aux.len(),
                self.inputs,
                self.aux
            )));
        }
        let mut w = dev.alloc(32 * (inputs.len() + aux.len()), "witness")?;
        dev.upload_into(&mut w, 0, as_bytes(inputs), "witness inputs")?;
        dev.upload_into(&mut w, 32 * inputs.len(), as_bytes(aux), "witness aux")?;
        Ok(w)
    }

    /// `A·w`, `B·w`, `C·w` into three buffers of `n` Fr each (`n` ≥ the recorded rows; the rows
    /// past them are zero), queued on the device's stream.
    pub fn products(&self, dev: &GpuDevice, w: &DevBuf, n: usize) -> Result<[DevBuf; 3]> {
        if (n as u64) < self.rows {
            return Err(backend_err(format!(
                "{} recorded rows do not fit {n} evaluations",
                self.rows
            )));
        }
        let mut out = Vec::with_capacity(3);
        for m in 0..3 {
            let o = dev.alloc_zeroed(32 * n, "recorded products")?;
            let rows = self.rows;
            if rows > 0 {
                gpu_launch!(
                    dev,
                    "spmv_rows",
                    grid(rows, 256),
                    &o.ptr(),
                    &self.ptr[m].ptr(),
                    &self.ent[m].ptr(),
                    &self.table.ptr(),
                    &w.ptr(),
                    &rows
                )?;
            }
            out.push(o);
        }
        out.try_into()
            .map_err(|_| backend_err("three product buffers"))
    }

    /// The first recorded row with `a·b ≠ c` in `products` (as [`DeviceRecording::products`]
    /// made them), `prepare`'s satisfiability check on the device; waits for the answer.
    pub fn first_unsatisfied(
        &self,
        dev: &GpuDevice,
        products: &[DevBuf; 3],
    ) -> Result<Option<usize>> {
        if products.iter().any(|p| (p.len() as u64) < 32 * self.rows) {
            return Err(backend_err(format!(
                "row check: product buffers shorter than {} rows",
                self.rows
            )));
        }
        let rows = self.rows;
        let first = dev.upload(as_bytes(&[rows]), "row check result")?;
        if rows > 0 {
            let [a, b, c] = products;
            gpu_launch!(
                dev,
                "spmv_unsatisfied",
                grid(rows, 256),
                &first.ptr(),
                &a.ptr(),
                &b.ptr(),
                &c.ptr(),
                &rows
            )?;
        }
        let mut out = [0u64];
        dev.download(&first, 0, as_bytes_mut(&mut out), "row check result")?;
        Ok((out[0] < rows).then_some(out[0] as usize))
    }
}
