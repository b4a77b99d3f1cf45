//! The recorded products on the device: a [`Recording`]'s matrices uploaded once and kept
//! resident ([`DeviceRecording`]), then per proof only the witness is uploaded and `spmv_rows`
//! (cuda-src/spmv.cu) computes `a`, `b`, `c` into buffers of the domain's size, zero past the
//! recorded rows (as `prepare` pads them), ready for the H step; `spmv_unsatisfied` checks every
//! row's `a·b = c` there; `split_gather` (cuda-src/split.cu) builds the three MSM scalar splits
//! from the same witness (the query gathers by index lists kept with the matrices), so only the
//! witness crosses PCIe.

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
    /// The witness columns of the A query (inputs, then the aux dense in A) and of the B query
    /// (the inputs dense in B, then the aux dense in B), as `u32` indices into `inputs ++ aux`.
    gather: [(DevBuf, u64); 2],
    rows: u64,
    inputs: usize,
    aux: usize,
}

/// One MSM's scalars on the device, as `prover::Split` holds them: `tail` (`n` Fr, zero where a
/// one stood), `live` of them nonzero (counted exactly: the tail's MSM sizes its plan by it), and,
/// if any scalar is one, `ones` (`⌈n / 64⌉` u64 words, the bits where a one stood). Built here
/// from a witness, or uploaded from a host `Split` (`PipelinedGpu::stage`).
pub struct DeviceSplit {
    pub tail: DevBuf,
    pub n: u64,
    pub live: u64,
    pub ones: Option<DevBuf>,
}

/// The witness columns the A and B queries take, in order (`prover::splits`' gathers): A:
/// every input, then `n_inputs + j` for each aux `j` dense in A; B: each input dense in B, then
/// `n_inputs + j` for each aux `j` dense in B.
pub fn query_columns(rec: &Recording) -> Result<[Vec<u32>; 2]> {
    let c = rec.counts();
    let col = |i: usize| {
        u32::try_from(i).map_err(|_| {
            backend_err(format!(
                "witness column {i} does not fit the device gathers' 32-bit indices"
            ))
        })
    };
    let [a_aux, b_in, b_aux] = rec.densities();
    let n = c.inputs;
    let a = (0..n)
        .map(col)
        .chain(a_aux.ones().map(|j| col(n + j)))
        .collect::<Result<Vec<u32>>>()?;
    let b = b_in
        .ones()
        .map(col)
        .chain(b_aux.ones().map(|j| col(n + j)))
        .collect::<Result<Vec<u32>>>()?;
    Ok([a, b])
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
        let [ga, gb] = query_columns(rec)?;
        let put = |g: &[u32]| -> Result<(DevBuf, u64)> {
            Ok((dev.upload(as_bytes(g), "query gathers")?, g.len() as u64))
        };
        let gather = [put(&ga)?, put(&gb)?];
        let c = rec.counts();
        Ok(DeviceRecording {
            ptr: [pa, pb, pc],
            ent: [ea, eb, ec],
            table,
            gather,
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
            .chain([&self.table, &self.gather[0].0, &self.gather[1].0])
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

    /// The three MSM scalar splits of the witness `w` (`inputs ++ aux`, as uploaded): `l` over
    /// the aux, `a_query` and `b_query` gathered by the query columns; queued on the device's
    /// stream, equal to the host's `prover::splits` word for word; returns once the stream is past
    /// them, with each tail's nonzero scalars counted (`DeviceSplit::live`).
    pub fn splits(&self, dev: &GpuDevice, w: &DevBuf) -> Result<[DeviceSplit; 3]> {
        let cols = (self.inputs + self.aux) as u64;
        if (w.len() as u64) < 32 * cols {
            return Err(backend_err(format!(
                "splits: a witness buffer of {} bytes for {cols} columns",
                w.len()
            )));
        }
        let live = dev.alloc_zeroed(3 * 4, "split nonzero counts")?;
        let split = |k: u64, idx: u64, base: u64, n: u64| -> Result<DeviceSplit> {
            let tail = dev.alloc(32 * n.max(1) as usize, "split scalars")?;
            let ones = dev.alloc(8 * n.div_ceil(64).max(1) as usize, "split one-bits")?;
            if n > 0 {
                gpu_launch!(
                    dev,
                    "split_gather",
                    grid(n.div_ceil(64), 128),
                    &tail.ptr(),
                    &ones.ptr(),
                    &(live.ptr() + 4 * k),
                    &w.ptr(),
                    &idx,
                    &base,
                    &n
                )?;
            }
            Ok(DeviceSplit {
                tail,
                n,
                live: n,
                ones: Some(ones),
            })
        };
        let [(ga, na), (gb, nb)] = &self.gather;
        let mut out = [
            split(0, 0, self.inputs as u64, self.aux as u64)?,
            split(1, ga.ptr(), 0, *na)?,
            split(2, gb.ptr(), 0, *nb)?,
        ];
        let mut counts = [0u32; 3];
        dev.download(&live, 0, as_bytes_mut(&mut counts), "split nonzero counts")?;
        for (s, c) in out.iter_mut().zip(counts) {
            s.live = c as u64;
        }
        Ok(out)
    }
}
