//! `run_kernel_bench`: device-resident timings of every kernel family, median of several runs
//! after a warm-up, timed with CUDA events. Prints one line per measurement and, last,
//! `msm_g1_2p26_ms=<x> ntt_2p27_ms=<y>`.

use std::io::Write;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::sys::CUevent_flags;
use ff::Field;
use group::{Curve as _, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use super::batch_add::batch_add_raw;
use super::buf::DevBuf;
use super::device::GpuDevice;
use super::h::{compute_h_device, scale_permute, HDomain, PowerTables};
use super::msm::{msm_windows, MsmPlan};
use super::ntt::{ntt_natural_with, twiddles, NttKernel};
use super::points::Curve;
use super::{as_bytes, backend_err, Result};

/// What to measure. `max_log` caps every size (2^max_log) so a quick run fits small GPUs.
#[derive(Clone, Debug)]
pub struct KernelBenchOptions {
    pub reps: usize,
    pub max_log: u32,
    /// Distinct random points generated on the CPU and tiled to the benchmark size.
    pub distinct_points: usize,
    /// Run only the families whose name contains this (h2d, field, msm_g1, msm_g2, ntt, h, batch_add, spmv).
    pub only: Option<String>,
    /// Window sizes to measure besides the planned one, at each MSM family's largest size.
    pub msm_windows: Vec<u32>,
}

impl Default for KernelBenchOptions {
    fn default() -> Self {
        KernelBenchOptions {
            reps: 5,
            max_log: 27,
            distinct_points: 4096,
            only: None,
            msm_windows: Vec::new(),
        }
    }
}

/// Median timings in ms, keyed by a name such as `msm_g1_2p26`.
#[derive(Clone, Debug, Default)]
pub struct KernelBenchReport {
    pub results: Vec<(String, f64)>,
}

impl KernelBenchReport {
    pub fn get(&self, key: &str) -> Option<f64> {
        self.results.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// The floor model's rate: 32-bit multiply-adds per second of an H100/H200's integer multiply
/// pipe.
const MULADDS_PER_SEC: f64 = 16.7e12;

/// Bucket additions per second the floor model allows: `MULADDS_PER_SEC` over ~590 a Fp product,
/// 10 products a G1 mixed addition and 28 a G2 one (8 products and 2 squares over Fp2: 3 and 2
/// Fp products).
fn floor_adds_per_sec(curve: Curve) -> f64 {
    let products = if curve == Curve::G1 { 10.0 } else { 28.0 };
    MULADDS_PER_SEC / (590.0 * products)
}

fn time_ms(dev: &GpuDevice, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?; // warm-up
    dev.sync("bench warm-up")?;
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let ev = |what| {
            dev.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| backend_err(format!("{what}: {e:?}")))
        };
        let (start, end) = (ev("bench start event")?, ev("bench end event")?);
        start
            .record(&dev.stream)
            .map_err(|e| backend_err(format!("record: {e:?}")))?;
        f()?;
        end.record(&dev.stream)
            .map_err(|e| backend_err(format!("record: {e:?}")))?;
        end.synchronize()
            .map_err(|e| backend_err(format!("bench sync: {e:?}")))?;
        v.push(
            start
                .elapsed_ms(&end)
                .map_err(|e| backend_err(format!("elapsed: {e:?}")))? as f64,
        );
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v[v.len() / 2])
}

/// Random field-element-shaped bytes below 2^254 (valid Montgomery-form scalars), in parallel.
fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO; n];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng =
                ChaCha20Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for s in chunk.iter_mut() {
                let mut limbs = [0u64; 4];
                limbs.iter_mut().for_each(|l| *l = rng.next_u64());
                limbs[3] &= (1 << 62) - 1;
                // SAFETY: Scalar is repr(transparent) over four little-endian u64 limbs; any value
                // below 2^254 < r is a valid Montgomery-form element.
                *s = unsafe { std::mem::transmute::<[u64; 4], Scalar>(limbs) };
            }
        });
    v
}

fn tiled_bases(
    dev: &GpuDevice,
    curve: Curve,
    n: usize,
    distinct: usize,
    rng: &mut ChaCha20Rng,
) -> Result<DevBuf> {
    let k = distinct.min(n).max(1);
    let seed = rng.next_u64();
    let bytes = match curve {
        Curve::G1 => {
            let p: Vec<G1Projective> = (0..k)
                .into_par_iter()
                .map(|i| G1Projective::random(ChaCha20Rng::seed_from_u64(i as u64 ^ seed)))
                .collect();
            let mut a = vec![G1Affine::default(); k];
            G1Projective::batch_normalize(&p, &mut a);
            as_bytes(&a).to_vec()
        }
        Curve::G2 => {
            let p: Vec<G2Projective> = (0..k)
                .into_par_iter()
                .map(|i| G2Projective::random(ChaCha20Rng::seed_from_u64(i as u64 ^ seed)))
                .collect();
            let mut a = vec![G2Affine::default(); k];
            G2Projective::batch_normalize(&p, &mut a);
            as_bytes(&a).to_vec()
        }
    };
    let mut b = dev.alloc(n * curve.affine_bytes(), "bench bases")?;
    dev.upload_into(&mut b, 0, &bytes, "bench bases")?;
    dev.tile(&mut b, bytes.len(), "bench bases")?;
    Ok(b)
}

fn line(out: &mut impl Write, s: String) {
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// Runs every kernel benchmark on `dev` and prints the results to stdout.
pub fn run_kernel_bench(dev: &GpuDevice, opts: &KernelBenchOptions) -> Result<KernelBenchReport> {
    let mut out = std::io::stdout();
    let mut rep = KernelBenchReport::default();
    let mut rng = ChaCha20Rng::seed_from_u64(0x00c0_ffee);
    line(
        &mut out,
        format!(
            "# cuzk kernel bench on {} (sm_{}{}, {} SMs), median of {} after warm-up",
            dev.name, dev.cc.0, dev.cc.1, dev.sm_count, opts.reps
        ),
    );
    let fits = |l: u32| l <= opts.max_log;
    let want = |family: &str| match opts.only.as_deref() {
        None => true,
        Some(o) => family.contains(o),
    };

    if want("h2d") {
        super::bench_h2d::run(dev, opts.reps, &mut out, &mut rep.results)?;
    }

    // Field products, register resident: K independent chains a thread (K = 1: latency bound;
    // K = 4: throughput), against the floor model (`MULADDS_PER_SEC` over ~264 multiply-adds an
    // Fr product, ~588 an Fp one).
    if want("field") {
        // Its own generator, so that the other families' inputs do not depend on this one.
        let mut rng = ChaCha20Rng::seed_from_u64(0xf1e1d);
        let threads: u64 = 1 << 20;
        // (words, floor, rounds, kernels as (name, chains)); Fr also through the FP64-pipe
        // product (fr52.cuh) and two chains on each pipe.
        const FR_KINDS: &[(&str, u32)] =
            &[("fr", 1), ("fr", 4), ("fr52", 1), ("fr52", 4), ("frmix", 4)];
        const FP_KINDS: &[(&str, u32)] = &[("fp", 1), ("fp", 4)];
        for (words, floor, rounds, kinds) in [
            (8usize, MULADDS_PER_SEC / 264.0, 1000u32, FR_KINDS),
            (12, MULADDS_PER_SEC / 588.0, 400, FP_KINDS),
        ] {
            let elems = |count: usize, seed: u64| -> Vec<u8> {
                if words == 8 {
                    return as_bytes(&random_scalars(count, seed)).to_vec();
                }
                let v: Vec<blstrs::Fp> = (0..count)
                    .into_par_iter()
                    .map(|i| {
                        blstrs::Fp::random(ChaCha20Rng::seed_from_u64(
                            seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                        ))
                    })
                    .collect();
                as_bytes(&v).to_vec()
            };
            let a = dev.upload(
                &elems(4 * threads as usize, rng.next_u64()),
                "bench field a",
            )?;
            let b = dev.upload(&elems(threads as usize, rng.next_u64()), "bench field b")?;
            let out_buf = dev.alloc(4 * threads as usize * words * 4, "bench field out")?;
            for &(name, k) in kinds {
                let kernel = format!("mul_chains_{name}_x{k}");
                let ms = time_ms(dev, opts.reps, || {
                    crate::gpu_launch!(
                        dev,
                        &kernel,
                        super::device::grid(threads, 128),
                        &out_buf.ptr(),
                        &a.ptr(),
                        &b.ptr(),
                        &threads,
                        &rounds
                    )
                })?;
                let rate = (threads * k as u64 * rounds as u64) as f64 / (ms / 1e3);
                let key = format!("field_{name}_mul_x{k}");
                line(&mut out, format!("{key:<18} {ms:>9.2} ms  {rate:.2e} products/s ({:.0}% of the {floor:.2e}/s floor model; {k} chain{} a thread)",
                    100.0 * rate / floor, if k == 1 { "" } else { "s" }));
                rep.results.push((key, ms));
            }
        }
    }

    // MSM, bases resident, random scalars resident.
    for (curve, logs) in [
        (Curve::G1, &[20u32, 22, 24, 26][..]),
        (Curve::G2, &[20u32, 22, 24][..]),
    ] {
        let family = if curve == Curve::G1 {
            "msm_g1"
        } else {
            "msm_g2"
        };
        let logs: Vec<u32> = logs
            .iter()
            .copied()
            .filter(|&l| fits(l) && want(family))
            .collect();
        let Some(&top) = logs.last() else { continue };
        let bases = tiled_bases(dev, curve, 1 << top, opts.distinct_points, &mut rng)?;
        let scal = dev.upload(
            as_bytes(&random_scalars(1 << top, rng.next_u64())),
            "bench scalars",
        )?;
        for l in logs {
            let n = 1u64 << l;
            let plan = MsmPlan::on(dev, n, curve);
            let ms = time_ms(dev, opts.reps, || {
                msm_windows(dev, bases.ptr(), scal.ptr(), &plan).map(|_| ())
            })?;
            let adds = n as f64 * plan.windows as f64;
            let rate = adds / (ms / 1e3);
            let key = format!("msm_{}_2p{l}", if curve == Curve::G1 { "g1" } else { "g2" });
            let floor = floor_adds_per_sec(curve);
            line(&mut out, format!("{key:<18} {ms:>9.2} ms  c={} windows={}  {:.2e} bucket adds/s ({:.0}% of the {:.2e}/s floor model)",
                plan.c, plan.windows, rate, 100.0 * rate / floor, floor));
            rep.results.push((key, ms));
        }
        // The largest size again with the flat share (2^18 threads, not whole waves of the
        // device's resident threads), to see what filling the last wave buys.
        {
            let n = 1u64 << top;
            let (waves, flat) = (MsmPlan::on(dev, n, curve), MsmPlan::new(n, curve));
            let ms = time_ms(dev, opts.reps, || {
                msm_windows(dev, bases.ptr(), scal.ptr(), &flat).map(|_| ())
            })?;
            let key = format!("{family}_2p{top}_flat");
            line(&mut out, format!("{key:<18} {ms:>9.2} ms  c={} windows={} ({} accumulation threads; the planned MSM above: {}, resident {})",
                flat.c, flat.windows, flat.accumulation_threads(), waves.accumulation_threads(),
                { let (k, b) = super::msm::accumulate_kernel(dev, curve); dev.resident_threads(k, b).unwrap_or(0) }));
            rep.results.push((key, ms));
        }
        // Heavily repeated scalars: all the same, so each window has one bucket spread over
        // thousands of shares (the case the tree fold of head partials is for), G1 and G2.
        {
            let l = top.min(24);
            let n = 1u64 << l;
            let same = random_scalars(1, rng.next_u64()).repeat(n as usize);
            let same = dev.upload(as_bytes(&same), "bench equal scalars")?;
            let plan = MsmPlan::on(dev, n, curve);
            let ms = time_ms(dev, opts.reps, || {
                msm_windows(dev, bases.ptr(), same.ptr(), &plan).map(|_| ())
            })?;
            let key = format!("{family}_2p{l}_equal");
            line(
                &mut out,
                format!(
                    "{key:<18} {ms:>9.2} ms  c={} windows={} (every scalar the same)",
                    plan.c, plan.windows
                ),
            );
            rep.results.push((key, ms));
        }
        // The largest size again under each requested window size (same kernels, other plans).
        for &c in &opts.msm_windows {
            let n = 1u64 << top;
            let plan = MsmPlan::with_window(n, curve, c);
            let ms = time_ms(dev, opts.reps, || {
                msm_windows(dev, bases.ptr(), scal.ptr(), &plan).map(|_| ())
            })?;
            let key = format!("{family}_2p{top}_c{}", plan.c);
            line(
                &mut out,
                format!(
                    "{key:<18} {ms:>9.2} ms  c={} windows={} (window sweep; {:.1} MB of scratch)",
                    plan.c,
                    plan.windows,
                    plan.scratch_bytes() as f64 / 1e6
                ),
            );
            rep.results.push((key, ms));
        }
        // The same MSM with its scalars first uploaded from pinned host memory.
        if curve == Curve::G1 && fits(26) {
            let n = 1usize << 26;
            let mut pinned = dev.alloc_pinned(32 * n, "bench scalars")?;
            pinned
                .as_mut_slice()?
                .copy_from_slice(as_bytes(&random_scalars(n, rng.next_u64())));
            let mut dst = dev.alloc(32 * n, "bench scalars")?;
            let plan = MsmPlan::on(dev, n as u64, curve);
            let ms = time_ms(dev, opts.reps, || {
                dev.upload_pinned(&mut dst, &pinned, "bench scalars")?;
                msm_windows(dev, bases.ptr(), dst.ptr(), &plan).map(|_| ())
            })?;
            line(&mut out, format!("msm_g1_2p26_pinned {ms:>9.2} ms  (2 GiB of scalars uploaded from pinned host memory, then the MSM)"));
            rep.results.push(("msm_g1_2p26_pinned".into(), ms));
        }
    }

    // NTT forward / coset / inverse, natural order in and out, device resident: the kernel
    // CUZK_NTT_KERNEL picks at every size, then both kernels explicitly at the largest.
    let ntt_logs: Vec<u32> = [20u32, 24, 26, 27]
        .into_iter()
        .filter(|&l| fits(l) && want("ntt"))
        .collect();
    if let Some(&top) = ntt_logs.last() {
        let data = dev.upload(
            as_bytes(&random_scalars(1 << top, rng.next_u64())),
            "bench NTT data",
        )?;
        let outb = dev.alloc(32usize << top, "bench NTT output")?;
        for l in ntt_logs {
            let tw = twiddles(dev, l)?;
            let n_inv = Option::<Scalar>::from(Scalar::from(1u64 << l).invert())
                .ok_or_else(|| backend_err("1/n"))?;
            let coset = PowerTables::new(dev, Scalar::from(7u64), Scalar::ONE, l)?;
            let unscale = PowerTables::new(dev, Scalar::ONE, n_inv, l)?;
            let time_ntt = |kernel: NttKernel| -> Result<(f64, f64, f64)> {
                let fwd = time_ms(dev, opts.reps, || {
                    ntt_natural_with(dev, data.ptr(), outb.ptr(), &tw, l, false, kernel)
                })?;
                let cos = time_ms(dev, opts.reps, || {
                    scale_permute(dev, data.ptr(), data.ptr(), &coset, l, false, false)?;
                    ntt_natural_with(dev, data.ptr(), outb.ptr(), &tw, l, false, kernel)
                })?;
                let inv = time_ms(dev, opts.reps, || {
                    ntt_natural_with(dev, data.ptr(), outb.ptr(), &tw, l, true, kernel)?;
                    scale_permute(dev, outb.ptr(), outb.ptr(), &unscale, l, false, false)
                })?;
                Ok((fwd, cos, inv))
            };
            let (fwd, cos, inv) = time_ntt(NttKernel::for_size(l))?;
            line(&mut out, format!("ntt_2p{l:<13} {fwd:>9.2} ms fwd  {cos:>9.2} ms coset  {inv:>9.2} ms inv (natural order in and out)"));
            rep.results.push((format!("ntt_2p{l}"), fwd));
            rep.results.push((format!("ntt_coset_2p{l}"), cos));
            rep.results.push((format!("ntt_inv_2p{l}"), inv));
            if l == top {
                for kernel in NttKernel::ALL {
                    let (fwd, cos, inv) = time_ntt(kernel)?;
                    let k = kernel.name();
                    line(&mut out, format!("ntt_{k}_2p{l:<10} {fwd:>9.2} ms fwd  {cos:>9.2} ms coset  {inv:>9.2} ms inv (pass kernel {k}; ntt_2p{l} used {})",
                        NttKernel::for_size(l).name()));
                    rep.results.push((format!("ntt_{k}_2p{l}_fwd"), fwd));
                    rep.results.push((format!("ntt_{k}_2p{l}_coset"), cos));
                    rep.results.push((format!("ntt_{k}_2p{l}_inv"), inv));
                }
            }
        }
    }

    // Fused H: a, b, c resident; 3 iNTT + 2 coset NTT + product + coset iNTT + the last pass.
    for l in [24u32, 27]
        .into_iter()
        .filter(|&l| fits(l) && want("h_fused"))
    {
        let d = HDomain::new(dev, l)?;
        let bufs: Vec<DevBuf> = (0..3)
            .map(|i| dev.upload(as_bytes(&random_scalars(1 << l, i)), "bench H input"))
            .collect::<Result<_>>()?;
        let ms = time_ms(dev, opts.reps, || {
            compute_h_device(dev, &d, bufs[0].ptr(), bufs[1].ptr(), bufs[2].ptr())
        })?;
        line(&mut out, format!("h_fused_2p{l:<9} {ms:>9.2} ms"));
        rep.results.push((format!("h_2p{l}"), ms));
    }

    // Batch addition, ~50% of the bits set.
    let ba_logs: Vec<u32> = [24u32, 26]
        .into_iter()
        .filter(|&l| fits(l) && want("batch_add"))
        .collect();
    if let Some(&top) = ba_logs.last() {
        let bases = tiled_bases(dev, Curve::G1, 1 << top, opts.distinct_points, &mut rng)?;
        let words: Vec<u64> = (0..(1usize << top) / 64).map(|_| rng.next_u64()).collect();
        let bits = dev.upload(as_bytes(&words), "bench bitmap")?;
        for l in ba_logs {
            let ms = time_ms(dev, opts.reps, || {
                batch_add_raw(dev, Curve::G1, &bases, &bits, 1 << l).map(|_| ())
            })?;
            line(
                &mut out,
                format!(
                    "batch_add_g1_2p{l:<4} {ms:>9.2} ms  ({:.2e} adds/s)",
                    (1u64 << (l - 1)) as f64 / (ms / 1e3)
                ),
            );
            rep.results.push((format!("batch_add_g1_2p{l}"), ms));
        }
    }

    // Recorded products (a, b, c of mulchain filling the domain): matrices resident, witness on
    // the device; the recording is made on the CPU first (seconds at 2^24).
    for l in [20u32, 24].into_iter().filter(|&l| fits(l) && want("spmv")) {
        let circuit = crate::circuits::MulChain::filling_domain(l, 2, 1);
        let (rec, values) = crate::recorded::record(circuit, true, 0)?;
        let (inputs, aux) = values.unwrap_or_default();
        let d = super::spmv::DeviceRecording::upload(dev, &rec)?;
        let w = d.upload_witness(dev, &inputs, &aux)?;
        let ms = time_ms(dev, opts.reps, || d.products(dev, &w, 1 << l).map(|_| ()))?;
        line(
            &mut out,
            format!(
                "spmv_mulchain_2p{l:<5} {ms:>9.2} ms  ({} entries, {:.1} MiB resident)",
                rec.counts().nnz.iter().sum::<usize>(),
                d.bytes() as f64 / (1 << 20) as f64
            ),
        );
        rep.results.push((format!("spmv_mulchain_2p{l}"), ms));
    }

    let show = |k: &str| {
        rep.get(k)
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "not_run".into())
    };
    line(
        &mut out,
        format!(
            "msm_g1_2p26_ms={} ntt_2p27_ms={}",
            show("msm_g1_2p26"),
            show("ntt_2p27")
        ),
    );
    Ok(rep)
}
