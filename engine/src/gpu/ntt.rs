//! NTT over Fr on the device: twiddle tables per domain and the sequence of shared-memory passes.
//!
//! Two pass kernels compute the same bits: `ntt_pass` (v1: radix 4, twiddles loaded from the
//! global table at each butterfly) and `ntt_pass_v2` (twiddles staged in shared memory, radix 8,
//! conflict-free shared memory; see cuda-src/ntt.cu). [`ntt_in_place`] runs the one
//! [`NttKernel::for_size`] picks (v2 from 2^24 up unless `CUZK_NTT_KERNEL` forces one); the
//! `_with` functions take the kernel explicitly. [`pass_launches`] is the one launch plan (what
//! the device queues and what the host emulation of the kernels runs); `model` is a host model
//! of v2's index and twiddle mapping, checked in `tests`.

use std::sync::OnceLock;

use blstrs::Scalar;
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::LaunchConfig;
use ff::{Field, PrimeField};

use super::buf::DevBuf;
use super::device::{grid, GpuDevice};
use super::{as_bytes, backend_err, Result};
use crate::gpu_launch;

/// Largest number of stages one pass runs in shared memory (2^9 elements, times 2 low indices).
const MAX_PASS_BITS: u32 = 9;

/// Smallest transform (log2) that takes the v2 pass kernel by default.
pub const V2_FROM_LOG: u32 = 24;

/// The NTT pass kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NttKernel {
    /// `ntt_pass`.
    V1,
    /// `ntt_pass_v2`.
    V2,
}

impl NttKernel {
    pub const ALL: [NttKernel; 2] = [NttKernel::V1, NttKernel::V2];

    /// The kernel `CUZK_NTT_KERNEL` forces (`v1` or `v2`), read once; None when unset (or
    /// anything else).
    pub fn from_env() -> Option<NttKernel> {
        static K: OnceLock<Option<NttKernel>> = OnceLock::new();
        *K.get_or_init(
            || match std::env::var("CUZK_NTT_KERNEL").as_deref().map(str::trim) {
                Ok("v2") | Ok("V2") => Some(NttKernel::V2),
                Ok("v1") | Ok("V1") => Some(NttKernel::V1),
                _ => None,
            },
        )
    }

    /// The kernel for a 2^log_n transform: the one `CUZK_NTT_KERNEL` forces, else v2 from
    /// `V2_FROM_LOG` up and v1 below. On an H200 with the current Fr product (session 10):
    /// forward 2^24 4.77 against 5.04 ms, 2^26 19.27 against 22.14 ms, 2^27 39.06 against 46.70
    /// ms, fused H 2^24 39.71 against 41.58 ms; at 2^20 v1 0.30 against 0.32 ms (2^21 to 2^23
    /// not measured). Both give the same bits.
    pub fn for_size(log_n: u32) -> NttKernel {
        Self::from_env().unwrap_or(if log_n >= V2_FROM_LOG {
            NttKernel::V2
        } else {
            NttKernel::V1
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            NttKernel::V1 => "v1",
            NttKernel::V2 => "v2",
        }
    }
}

/// The primitive 2^log_n-th root of unity bellperson uses: ROOT_OF_UNITY squared (S - log_n) times.
pub fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

/// w^(2^k) for k < 40, w = `omega(log_n)`: what `ntt_twiddles` builds the twiddle table from.
pub fn root_powers(log_n: u32) -> Vec<Scalar> {
    let mut p = omega(log_n);
    (0..40)
        .map(|_| {
            let q = p;
            p = p.square();
            q
        })
        .collect()
}

/// The twiddle table w^j, j < max(n/2, 1), of the domain 2^log_n, built on the device.
pub fn twiddles(dev: &GpuDevice, log_n: u32) -> Result<DevBuf> {
    if log_n > Scalar::S {
        return Err(backend_err(format!(
            "NTT domain 2^{log_n} exceeds Fr's 2-adicity {}",
            Scalar::S
        )));
    }
    let count: u64 = if log_n == 0 { 1 } else { 1u64 << (log_n - 1) };
    let pows_d = dev.upload(as_bytes(&root_powers(log_n)), "NTT root powers")?;
    let tw = dev.alloc(count as usize * 32, "NTT twiddles")?;
    gpu_launch!(
        dev,
        "ntt_twiddles",
        grid(count, 256),
        &tw.ptr(),
        &pows_d.ptr(),
        &count
    )?;
    Ok(tw)
}

/// The pass plan: `(b, t)` bit ranges in execution order for DIF (top down) or DIT (bottom up).
fn plan(log_n: u32, dif: bool) -> Vec<(u32, u32)> {
    if log_n == 0 {
        return vec![];
    }
    let passes = log_n.div_ceil(MAX_PASS_BITS);
    let mut ranges = Vec::new();
    let mut b = 0;
    for i in 0..passes {
        let t = log_n / passes + u32::from(i < log_n % passes);
        ranges.push((b, t));
        b += t;
    }
    if dif {
        ranges.reverse();
    }
    ranges
}

/// log2 of the low indices an `ntt_pass` block takes at once (consecutive elements of a run).
fn lg_low(b: u32) -> u32 {
    if b >= 1 {
        1
    } else {
        0
    }
}

/// log2 of the elements of an `ntt_pass_v2` block where the transform has them.
const V2_BLOCK_BITS: u32 = 10;

/// An `ntt_pass_v2` block of the pass (b, t) of 2^log_n: `(lgL, lgS)`, 2^lgS groups of the
/// higher bits (as many as fit beside the 2^t stage positions in 2^10 elements, as far as there
/// are higher bits) times 2^lgL consecutive low indices (whatever is still missing). Groups share
/// their twiddles, so a block of 2^9 stage positions times 2 groups holds half the twiddles of
/// one with 2 low indices: 50 KiB of shared memory instead of 66.6 KiB, four blocks an SM with
/// 128 registers (−7 % at 2^27 on an H200), at the price of global runs of one element (32
/// bytes, a whole sector) in the passes with b > 0. `CUZK_NTT_V2_GROUPS=0` (read once) prefers
/// low indices instead, the first shape of this kernel.
fn v2_shape(log_n: u32, b: u32, t: u32) -> (u32, u32) {
    static GROUPS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let groups = *GROUPS
        .get_or_init(|| std::env::var("CUZK_NTT_V2_GROUPS").map_or(true, |v| v.trim() != "0"));
    v2_shape_of(log_n, b, t, groups)
}

fn v2_shape_of(log_n: u32, b: u32, t: u32, groups_first: bool) -> (u32, u32) {
    let room = V2_BLOCK_BITS.saturating_sub(t);
    if groups_first {
        let lg_s = room.min(log_n - b - t);
        return ((room - lg_s).min(b), lg_s);
    }
    let lg_l = b.min(room);
    let lg_s = (room - lg_l).min(log_n - b - t);
    (lg_l, lg_s)
}

/// Threads of an `ntt_pass_v2` block of `elems` elements: one radix-8 group each.
fn v2_threads(elems: u64) -> u32 {
    (elems / 8).clamp(1, 128) as u32
}

/// Dynamic shared memory of an `ntt_pass_v2` block of `elems` elements, t stages and 2^lg_l low
/// indices (`v2_shape`): 8 data rows of E + E/32 words (+ 16), 8 twiddle rows of
/// `v2_twiddle_row` words.
fn v2_smem_bytes(t: u32, lg_l: u32, elems: u64) -> u32 {
    let rs = elems + elems / 32;
    (4 * (8 * rs + 16 + 8 * v2_twiddle_row(t, lg_l, elems) as u64)) as u32
}

/// Whether an `ntt_pass_v2` block of `elems` elements and t stages takes the kernel's radix-8
/// path (block size a compile-time constant) or the run-time one: the kernel's dispatch.
fn v2_radix8(t: u32, elems: u64) -> bool {
    elems == 1 << V2_BLOCK_BITS && (t == 9 || t == 8) && v2_threads(elems) == 128
}

/// Words per twiddle row in an `ntt_pass_v2` block: the block's (2^t - 1) · 2^lgL twiddle slots,
/// rounded up to 512 or 1024 in the radix-8 blocks (the kernel's constant row stride there).
fn v2_twiddle_row(t: u32, lg_l: u32, elems: u64) -> u32 {
    let twn = ((1u32 << t) - 1) << lg_l;
    match v2_radix8(t, elems) {
        true if twn <= 512 => 512,
        true => 1024,
        false => twn,
    }
}

/// In-place radix-2 transform of `data` (2^log_n Fr elements). DIF: natural order in, bit-reversed
/// out; DIT: bit-reversed in, natural out. `inverse` uses w^-1 and does not scale by 1/n.
/// `data` is the device address of 2^log_n Fr elements. Runs the kernel `NttKernel::for_size` picks.
pub fn ntt_in_place(
    dev: &GpuDevice,
    data: u64,
    tw: &DevBuf,
    log_n: u32,
    dif: bool,
    inverse: bool,
) -> Result<()> {
    ntt_in_place_with(
        dev,
        data,
        tw,
        log_n,
        dif,
        inverse,
        NttKernel::for_size(log_n),
    )
}

/// One pass kernel launch of a transform: `blocks` blocks of `threads` threads with `smem` bytes
/// of dynamic shared memory, over the bit range [b, b + t) of the element index, blocks of
/// 2^lg_l low indices (and, for v2, 2^lg_s groups of the higher bits). The kernel's arguments
/// are (data, out, tw, log_n, b, t, lg_l, [lg_s,] dif, inverse); `out` is null (in place) except
/// where `natural` is set: the last pass of a natural-order transform writes element g to
/// out[bitrev(g)] (cuda-src/ntt.cu, `ntt_dst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassLaunch {
    pub kernel: NttKernel,
    pub blocks: u64,
    pub threads: u32,
    pub smem: u32,
    pub b: u32,
    pub t: u32,
    pub lg_l: u32,
    pub lg_s: u32,
    pub natural: bool,
}

/// The pass launches of a 2^log_n transform in execution order (DIF top down, DIT bottom up):
/// what [`ntt_in_place_with`] queues, and what the host emulation of the kernels
/// (engine/tests/cuda_math_on_host.rs) runs.
pub fn pass_launches(log_n: u32, dif: bool, kernel: NttKernel) -> Vec<PassLaunch> {
    plan(log_n, dif)
        .into_iter()
        .map(|(b, t)| match kernel {
            NttKernel::V1 => {
                let lg_l = lg_low(b);
                let elems = (1u64 << t) << lg_l;
                let threads = (elems / 4).clamp(1, 256) as u32;
                PassLaunch {
                    kernel,
                    blocks: (1u64 << log_n) / elems,
                    threads,
                    smem: (elems * 32) as u32,
                    b,
                    t,
                    lg_l,
                    lg_s: 0,
                    natural: false,
                }
            }
            NttKernel::V2 => {
                let (lg_l, lg_s) = v2_shape(log_n, b, t);
                let elems = 1u64 << (t + lg_l + lg_s);
                let smem = v2_smem_bytes(t, lg_l, elems);
                PassLaunch {
                    kernel,
                    blocks: (1u64 << log_n) / elems,
                    threads: v2_threads(elems),
                    smem,
                    b,
                    t,
                    lg_l,
                    lg_s,
                    natural: false,
                }
            }
        })
        .collect()
}

/// The launches of a natural-order transform (DIF, natural in and out): [`pass_launches`] with
/// the last pass (b = 0) writing bit-reversed into the output buffer. Empty for 2^0 (no pass).
pub fn natural_launches(log_n: u32, kernel: NttKernel) -> Vec<PassLaunch> {
    let mut v = pass_launches(log_n, true, kernel);
    if let Some(last) = v.last_mut() {
        debug_assert_eq!(
            last.b, 0,
            "a DIF transform's last pass holds the bottom bits"
        );
        last.natural = true;
    }
    v
}

/// [`ntt_in_place`] with the pass kernel given; both kernels give the same bits.
pub fn ntt_in_place_with(
    dev: &GpuDevice,
    data: u64,
    tw: &DevBuf,
    log_n: u32,
    dif: bool,
    inverse: bool,
    kernel: NttKernel,
) -> Result<()> {
    queue_passes(
        dev,
        data,
        0,
        tw,
        log_n,
        &pass_launches(log_n, dif, kernel),
        (dif, inverse),
    )
}

/// Queues `launches` on `data` (`out`: where a `natural` pass writes), in the direction
/// `(dif, inverse)`.
fn queue_passes(
    dev: &GpuDevice,
    data: u64,
    out: u64,
    tw: &DevBuf,
    log_n: u32,
    launches: &[PassLaunch],
    (dif, inverse): (bool, bool),
) -> Result<()> {
    if tw.len() < (16usize << log_n).max(32) {
        return Err(backend_err(format!(
            "NTT twiddle table of {} bytes is too small for 2^{log_n}",
            tw.len()
        )));
    }
    let (dif_u, inv_u) = (u32::from(dif), u32::from(inverse));
    {
        // Above 48 KiB a v2 block's dynamic shared memory must be allowed explicitly; the largest
        // carveout lets three blocks of 2^10 elements (65 KiB each) share an SM.
        let most = launches
            .iter()
            .filter(|l| l.kernel == NttKernel::V2)
            .map(|l| l.smem)
            .max()
            .unwrap_or(0);
        if most > 48 * 1024 {
            let f = dev.func("ntt_pass_v2")?;
            dev.ctx
                .bind_to_thread()
                .map_err(|e| backend_err(format!("binding the context for ntt_pass_v2: {e:?}")))?;
            f.set_attribute(
                CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                most as i32,
            )
            .map_err(|e| {
                backend_err(format!(
                    "allowing {most} bytes of shared memory to ntt_pass_v2: {e:?}"
                ))
            })?;
            f.set_attribute(
                CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                100,
            )
            .map_err(|e| backend_err(format!("shared-memory carveout of ntt_pass_v2: {e:?}")))?;
        }
    }
    for &l in launches {
        let PassLaunch {
            b, t, lg_l, lg_s, ..
        } = l;
        let dst: u64 = if l.natural { out } else { 0 };
        let cfg = LaunchConfig {
            grid_dim: (l.blocks as u32, 1, 1),
            block_dim: (l.threads, 1, 1),
            shared_mem_bytes: l.smem,
        };
        match l.kernel {
            NttKernel::V1 => gpu_launch!(
                dev,
                "ntt_pass",
                cfg,
                &data,
                &dst,
                &tw.ptr(),
                &log_n,
                &b,
                &t,
                &lg_l,
                &dif_u,
                &inv_u
            )?,
            NttKernel::V2 => gpu_launch!(
                dev,
                "ntt_pass_v2",
                cfg,
                &data,
                &dst,
                &tw.ptr(),
                &log_n,
                &b,
                &t,
                &lg_l,
                &lg_s,
                &dif_u,
                &inv_u
            )?,
        }
    }
    Ok(())
}

/// Natural-order transform: DIF on `data` (destroyed), its last pass writing bit-reversed into
/// `out` ([`natural_launches`]; no separate bit-reversal pass). `inverse` uses w^-1 and does not
/// scale by 1/n. Both are device addresses of 2^log_n Fr, and must not overlap. Runs the kernel
/// `CUZK_NTT_KERNEL` picks.
pub fn ntt_natural(
    dev: &GpuDevice,
    data: u64,
    out: u64,
    tw: &DevBuf,
    log_n: u32,
    inverse: bool,
) -> Result<()> {
    ntt_natural_with(
        dev,
        data,
        out,
        tw,
        log_n,
        inverse,
        NttKernel::for_size(log_n),
    )
}

/// [`ntt_natural`] with the pass kernel given.
pub fn ntt_natural_with(
    dev: &GpuDevice,
    data: u64,
    out: u64,
    tw: &DevBuf,
    log_n: u32,
    inverse: bool,
    kernel: NttKernel,
) -> Result<()> {
    let launches = natural_launches(log_n, kernel);
    if launches.is_empty() {
        // 2^0: no pass, the transform is the identity.
        return gpu_launch!(
            dev,
            "bitrev_copy",
            grid(1u64 << log_n, 256),
            &out,
            &data,
            &log_n
        );
    }
    queue_passes(dev, data, out, tw, log_n, &launches, (true, inverse))
}

/// A host model of `ntt_pass_v2`: every block's loads, twiddle slots, rounds, groups, element and
/// twiddle indices and shared-memory words exactly as the kernel computes them (one thread after
/// another; the model checks that a round's groups are disjoint), with blstrs arithmetic, which
/// is bit-identical to the kernel's. Also checks the bank-conflict claims.
#[cfg(test)]
mod model {
    use std::collections::{HashMap, HashSet};

    use super::*;
    use crate::gpu::as_bytes_mut;

    pub fn words(s: &Scalar) -> [u32; 8] {
        let b = as_bytes(std::slice::from_ref(s));
        std::array::from_fn(|k| u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().unwrap()))
    }

    pub fn scalar(w: [u32; 8]) -> Scalar {
        let mut s = Scalar::ZERO;
        let b = as_bytes_mut(std::slice::from_mut(&mut s));
        for k in 0..8 {
            b[4 * k..4 * k + 4].copy_from_slice(&w[k].to_le_bytes());
        }
        s
    }

    // ---- the kernel's helpers, line by line ----
    fn col(e: u32) -> u32 {
        e + (e >> 5)
    }
    fn row(r: u32, rs: u32) -> u32 {
        r * rs + if r >= 4 { 16 } else { 0 }
    }
    pub fn scatter(u: u32, p: u32, w: u32, nb: u32) -> u32 {
        let win = ((1u32 << w) - 1) << p;
        let (mut e, mut used, mut ub) = (0u32, win, 0u32);
        for i in 0..5 {
            let c = if i < nb && (win >> i) & 1 == 0 {
                i
            } else {
                i + 5
            };
            if c < nb {
                e |= ((u >> ub) & 1) << c;
                used |= 1 << c;
                ub += 1;
            }
        }
        for c in 0..10 {
            if c < nb && (used >> c) & 1 == 0 {
                e |= ((u >> ub) & 1) << c;
                ub += 1;
            }
        }
        e
    }
    fn slot(e: u32, q: u32, lg_l: u32) -> u32 {
        (e & ((1 << (q + lg_l)) - 1)) + (((1 << q) - 1) << lg_l)
    }

    /// Twiddle table entry j (w^j, j < n/2): the device table's contents.
    pub trait Table {
        fn get(&self, j: u32) -> Scalar;
        fn len(&self) -> u64;
    }
    impl Table for Vec<Scalar> {
        fn get(&self, j: u32) -> Scalar {
            self[j as usize]
        }
        fn len(&self) -> u64 {
            Vec::len(self) as u64
        }
    }
    /// w^j by squares, for tables too big to hold.
    pub struct PowTable {
        pub pows: Vec<Scalar>,
        pub len: u64,
    }
    impl PowTable {
        pub fn new(log_n: u32) -> Self {
            let mut pows = vec![omega(log_n)];
            for _ in 1..32 {
                let p = *pows.last().unwrap();
                pows.push(p.square());
            }
            PowTable {
                pows,
                len: if log_n == 0 { 1 } else { 1u64 << (log_n - 1) },
            }
        }
    }
    impl Table for PowTable {
        fn get(&self, j: u32) -> Scalar {
            let mut acc = Scalar::ONE;
            for k in 0..32 {
                if (j >> k) & 1 == 1 {
                    acc *= self.pows[k];
                }
            }
            acc
        }
        fn len(&self) -> u64 {
            self.len
        }
    }

    /// Bank-conflict bookkeeping: the worst number of different words in one bank among the
    /// lanes of one warp-wide access, per kind of access.
    /// Keyed by (kind of access, elements of the block).
    #[derive(Default, Debug)]
    pub struct Banks {
        pub worst: HashMap<(&'static str, u32), u32>,
    }
    impl Banks {
        fn access(&mut self, kind: &'static str, elems: u32, addrs: &[u32]) {
            let mut per_bank: HashMap<u32, HashSet<u32>> = HashMap::new();
            for &a in addrs {
                per_bank.entry(a % 32).or_default().insert(a);
            }
            let deg = per_bank.values().map(|s| s.len() as u32).max().unwrap_or(0);
            let w = self.worst.entry((kind, elems)).or_insert(0);
            *w = (*w).max(deg);
        }
        /// The worst degree of the accesses of `kind` in blocks of at least `min_elems`.
        pub fn worst(&self, kind: &str, min_elems: u32) -> u32 {
            self.worst
                .iter()
                .filter(|((k, e), _)| *k == kind && *e >= min_elems)
                .map(|(_, &d)| d)
                .max()
                .unwrap_or(0)
        }
    }

    /// The transform's elements by global index (dense, or only some blocks').
    pub trait Data {
        fn get(&self, g: u64) -> Scalar;
        fn set(&mut self, g: u64, v: Scalar);
    }
    impl Data for Vec<Scalar> {
        fn get(&self, g: u64) -> Scalar {
            self[g as usize]
        }
        fn set(&mut self, g: u64, v: Scalar) {
            self[g as usize] = v;
        }
    }
    impl Data for HashMap<u64, Scalar> {
        fn get(&self, g: u64) -> Scalar {
            *HashMap::get(self, &g)
                .unwrap_or_else(|| panic!("element {g} is not in the model's data"))
        }
        fn set(&mut self, g: u64, v: Scalar) {
            assert!(
                self.contains_key(&g),
                "element {g} is not in the model's data"
            );
            self.insert(g, v);
        }
    }

    pub struct Pass {
        pub log_n: u32,
        pub b: u32,
        pub t: u32,
        pub dif: bool,
        pub inverse: bool,
    }

    impl Pass {
        pub fn lg_l(&self) -> u32 {
            v2_shape(self.log_n, self.b, self.t).0
        }
        pub fn lg_s(&self) -> u32 {
            v2_shape(self.log_n, self.b, self.t).1
        }
        pub fn nb(&self) -> u32 {
            self.t + self.lg_l() + self.lg_s()
        }
        pub fn elems(&self) -> u32 {
            1 << self.nb()
        }
        pub fn blocks(&self) -> u64 {
            (1u64 << self.log_n) / self.elems() as u64
        }
        /// The kernel's dispatch: the radix-8 path (block size a constant) or the run-time one.
        pub fn radix8(&self) -> bool {
            v2_radix8(self.t, self.elems() as u64)
        }
        /// The global element of local element e of block `blk` (hiS, lg), as the kernel's g.
        pub fn global(&self, blk: u64, e: u32) -> u64 {
            let (b, t, lg_l, lg_s) = (self.b, self.t, self.lg_l(), self.lg_s());
            let lo_groups = (1u64 << b) >> lg_l;
            let (his, lg) = (blk / lo_groups, blk % lo_groups);
            let base = (his << (lg_s + b + t)) | (lg << lg_l);
            let e = e as u64;
            base + ((e >> (lg_l + t)) << (b + t))
                + (((e >> lg_l) & ((1 << t) - 1)) << b)
                + (e & ((1 << lg_l) - 1))
        }
        /// The global element indices of block `blk`, by local index.
        pub fn block_elements(&self, blk: u64) -> Vec<u64> {
            (0..self.elems()).map(|e| self.global(blk, e)).collect()
        }

        /// Runs block `blk` of this pass on `data` exactly as ntt_pass_v2 does; with `banks`, also
        /// records its shared-memory accesses warp by warp (they do not depend on the block).
        pub fn run_block(
            &self,
            data: &mut dyn Data,
            tw: &dyn Table,
            blk: u64,
            mut banks: Option<&mut Banks>,
        ) {
            let (log_n, b, t, lg_l) = (self.log_n, self.b, self.t, self.lg_l());
            let nb = self.nb();
            let e_n = 1u32 << nb;
            let bd = v2_threads(e_n as u64);
            let rs = e_n + (e_n >> 5);
            let l = 1u32 << lg_l;
            let twn = ((1u32 << t) - 1) << lg_l;
            let tws = v2_twiddle_row(t, lg_l, e_n as u64);
            let smem_words = v2_smem_bytes(t, lg_l, e_n as u64) as usize / 4;
            let tsm = 8 * rs + 16;
            let mut sm: Vec<Option<u32>> = vec![None; smem_words];
            let lg = (blk % ((1u64 << b) >> lg_l)) as u32;
            let half_n = (1u32 << log_n) >> 1;
            let g_of = |e: u32| self.global(blk, e);

            // Data loads: piece c = half (c & 1) of element c >> 1.
            let mut c0 = 0;
            while c0 < 2 * e_n {
                for i in 0..8 {
                    let mut lanes: Vec<Vec<u32>> = vec![Vec::new(); 4];
                    for tid in 0..bd {
                        let c = c0 + i * bd + tid;
                        if c < 2 * e_n {
                            let (e, h) = (c >> 1, c & 1);
                            let w = words(&data.get(g_of(e)));
                            let q = col(e) + if h == 1 { row(4, rs) } else { 0 };
                            for k in 0..4 {
                                let a = (q + k * rs) as usize;
                                assert!(a < tsm as usize, "data word outside the data rows");
                                assert!(sm[a].is_none(), "data word {a} written twice");
                                sm[a] = Some(w[(4 * h + k) as usize]);
                                if tid % 32 == 0 {
                                    lanes[k as usize].clear();
                                }
                                lanes[k as usize].push(a as u32);
                                if tid % 32 == 31 || tid == bd - 1 {
                                    if let Some(bk) = banks.as_deref_mut() {
                                        bk.access("global<->shared data", e_n, &lanes[k as usize]);
                                    }
                                }
                            }
                        }
                    }
                }
                c0 += 8 * bd;
            }

            // Twiddles.
            let mut s0 = 0;
            while s0 < twn {
                for i in 0..4 {
                    for tid in 0..bd {
                        let s = s0 + i * bd + tid;
                        if s < twn {
                            let a = (s >> lg_l) + 1;
                            let q = 31 - a.leading_zeros();
                            let m = a - (1 << q);
                            let j = (m << b) | (lg << lg_l) | (s & (l - 1));
                            let ex = j << (log_n - b - q - 1);
                            let v = if ex == 0 {
                                Scalar::ONE
                            } else {
                                let idx = if self.inverse { half_n - ex } else { ex };
                                assert!(
                                    (idx as u64) < tw.len(),
                                    "twiddle index {idx} outside the table"
                                );
                                let raw = tw.get(idx);
                                if self.inverse {
                                    -raw
                                } else {
                                    raw
                                }
                            };
                            let w = words(&v);
                            for r in 0..8 {
                                let addr = (tsm + s + r * tws) as usize;
                                assert!(addr < smem_words, "twiddle word outside shared memory");
                                assert!(sm[addr].is_none(), "twiddle word written twice");
                                sm[addr] = Some(w[r as usize]);
                            }
                        }
                    }
                }
                s0 += 4 * bd;
            }

            // Rounds.
            let radix8 = self.radix8();
            let maxw = if radix8 { 3 } else { 2 };
            let rounds = if radix8 { 3 } else { t.div_ceil(2) };
            for r in 0..rounds {
                let w = if r + 1 < rounds { maxw } else { t - maxw * r };
                let lowbit = if self.dif {
                    if r + 1 < rounds {
                        t - maxw * (r + 1)
                    } else {
                        0
                    }
                } else {
                    maxw * r
                };
                let p = lowbit + lg_l;
                let one0 = lowbit == 0 && b == 0;
                // Per thread, its groups in order; a warp's lanes are threads 32k .. 32k + 31.
                let mut touched = vec![false; e_n as usize];
                let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); bd as usize];
                if radix8 && w == 3 {
                    for tid in 0..bd {
                        per_thread[tid as usize].push(scatter(tid, p, 3, nb));
                    }
                } else if radix8 {
                    assert_eq!(
                        (t, w),
                        (8, 2),
                        "radix-8 path, a round of neither 3 nor 2 stages"
                    );
                    for tid in 0..bd {
                        per_thread[tid as usize]
                            .extend([scatter(tid, p, 2, nb), scatter(tid + bd, p, 2, nb)]);
                    }
                } else {
                    for tid in 0..bd {
                        let mut u = tid;
                        while u < (e_n >> w) {
                            per_thread[tid as usize].push(scatter(u, p, w, nb));
                            u += bd;
                        }
                    }
                }
                let kind_data = if radix8 {
                    "round data (radix-8 path)"
                } else {
                    "round data (run-time path)"
                };
                let kind_tw = if radix8 {
                    "round twiddles (radix-8 path)"
                } else {
                    "round twiddles (run-time path)"
                };
                let iters = per_thread.iter().map(Vec::len).max().unwrap_or(0);
                for it in 0..iters {
                    // Bank checks, warp by warp, for this iteration's groups.
                    let check = banks.is_some();
                    for warp in per_thread.chunks(32).filter(|_| check) {
                        let bk = banks.as_deref_mut().unwrap();
                        let e0s: Vec<u32> =
                            warp.iter().filter_map(|g| g.get(it).copied()).collect();
                        for k in 0..(1u32 << w) {
                            let addrs: Vec<u32> =
                                e0s.iter().map(|&e0| col(e0) + col(k << p)).collect();
                            bk.access(kind_data, e_n, &addrs);
                        }
                        for jj in 0..w {
                            let j = if self.dif { w - 1 - jj } else { jj };
                            let h = 1u32 << j;
                            for k in 0..(1u32 << w) {
                                if k & h != 0 {
                                    continue;
                                }
                                let addrs: Vec<u32> = e0s
                                    .iter()
                                    .map(|&e0| {
                                        tsm + slot(e0 | ((k & (h - 1)) << p), lowbit + j, lg_l)
                                    })
                                    .collect();
                                bk.access(kind_tw, e_n, &addrs);
                            }
                        }
                    }
                    for groups in &per_thread {
                        let Some(&e0) = groups.get(it) else { continue };
                        assert_eq!(e0 & (((1 << w) - 1) << p), 0, "group base with window bits");
                        let q0 = col(e0);
                        let mut x: Vec<Scalar> = (0..(1u32 << w))
                            .map(|k| {
                                let e = e0 | (k << p);
                                assert!(e < e_n);
                                assert!(
                                    !touched[e as usize],
                                    "element {e} in two groups of a round"
                                );
                                touched[e as usize] = true;
                                assert_eq!(q0 + col(k << p), col(e), "column not additive");
                                let qk = q0 + col(k << p);
                                scalar(std::array::from_fn(|rr| {
                                    sm[(row(rr as u32, rs) + qk) as usize]
                                        .expect("data word never written")
                                }))
                            })
                            .collect();
                        for jj in 0..w {
                            let j = if self.dif { w - 1 - jj } else { jj };
                            let h = 1usize << j;
                            let one = j == 0 && one0;
                            for k in 0..(1usize << w) {
                                if k & h != 0 {
                                    continue;
                                }
                                if one {
                                    let s = x[k] + x[k + h];
                                    x[k + h] = x[k] - x[k + h];
                                    x[k] = s;
                                    continue;
                                }
                                let sl = slot(e0 | (((k & (h - 1)) as u32) << p), lowbit + j, lg_l);
                                assert!(sl < twn, "twiddle slot {sl} beyond the {twn} loaded");
                                let wv = scalar(std::array::from_fn(|rr| {
                                    sm[(tsm + sl + rr as u32 * tws) as usize]
                                        .expect("twiddle word never written")
                                }));
                                if self.dif {
                                    let s = x[k] + x[k + h];
                                    x[k + h] = (x[k] - x[k + h]) * wv;
                                    x[k] = s;
                                } else {
                                    let yw = x[k + h] * wv;
                                    x[k + h] = x[k] - yw;
                                    x[k] += yw;
                                }
                            }
                        }
                        for (k, v) in x.iter().enumerate() {
                            let qk = q0 + col((k as u32) << p);
                            let wv = words(v);
                            for rr in 0..8 {
                                sm[(row(rr, rs) + qk) as usize] = Some(wv[rr as usize]);
                            }
                        }
                    }
                }
                assert!(touched.iter().all(|&x| x), "a round left elements out");
            }

            // Stores.
            let mut c0 = 0;
            let mut done = vec![0u8; e_n as usize];
            while c0 < 2 * e_n {
                for i in 0..8 {
                    for tid in 0..bd {
                        let c = c0 + i * bd + tid;
                        if c < 2 * e_n {
                            let (e, h) = (c >> 1, c & 1);
                            let q = col(e) + if h == 1 { row(4, rs) } else { 0 };
                            let g = g_of(e);
                            let mut w = words(&data.get(g));
                            for k in 0..4 {
                                w[(4 * h + k) as usize] = sm[(q + k * rs) as usize].unwrap();
                            }
                            data.set(g, scalar(w));
                            done[e as usize] += 1;
                        }
                    }
                }
                c0 += 8 * bd;
            }
            assert!(
                done.iter().all(|&d| d == 2),
                "a stored element's halves are not written exactly once each"
            );
        }
    }

    /// The whole v2 transform in place on the host model.
    pub fn ntt_v2(
        data: &mut Vec<Scalar>,
        tw: &dyn Table,
        log_n: u32,
        dif: bool,
        inverse: bool,
        banks: &mut Banks,
    ) {
        assert_eq!(data.len(), 1usize << log_n);
        for (b, t) in plan(log_n, dif) {
            let pass = Pass {
                log_n,
                b,
                t,
                dif,
                inverse,
            };
            for blk in 0..pass.blocks() {
                pass.run_block(
                    data,
                    tw,
                    blk,
                    if blk == 0 { Some(&mut *banks) } else { None },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::model::*;
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn random(rng: &mut ChaCha20Rng, n: usize) -> Vec<Scalar> {
        (0..n).map(|_| Scalar::random(&mut *rng)).collect()
    }

    fn bitrev(i: usize, log_n: u32) -> usize {
        if log_n == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - log_n)
        }
    }

    /// w^e or w^-e of the domain, computed independently of the kernel's table convention.
    fn root_pow(log_n: u32, e: u64, inverse: bool) -> Scalar {
        let w = omega(log_n);
        let w = if inverse { w.invert().unwrap() } else { w };
        w.pow_vartime([e])
    }

    /// Plain radix-2 stages: the global stages `stages` in the given order on all of `a`, the
    /// twiddle of exponent e from `pows`.
    fn radix2_stages(
        a: &mut [Scalar],
        log_n: u32,
        stages: &[u32],
        dif: bool,
        pows: &dyn Fn(u64) -> Scalar,
    ) {
        let n = a.len();
        for &s in stages {
            let h = 1usize << s;
            for i in 0..n {
                if i & h != 0 {
                    continue;
                }
                let w = pows(((i & (h - 1)) as u64) << (log_n - s - 1));
                let (x, y) = (a[i], a[i + h]);
                if dif {
                    a[i] = x + y;
                    a[i + h] = (x - y) * w;
                } else {
                    let yw = y * w;
                    a[i] = x + yw;
                    a[i + h] = x - yw;
                }
            }
        }
    }

    /// The reference transform: DIF (natural in, bit-reversed out) or DIT (bit-reversed in,
    /// natural out), with the powers of w (or w^-1) from a table.
    fn reference(a: &mut [Scalar], log_n: u32, dif: bool, inverse: bool) {
        if log_n == 0 {
            return;
        }
        let half = 1usize << (log_n - 1);
        let w = root_pow(log_n, 1, inverse);
        let mut table = Vec::with_capacity(half);
        let mut p = Scalar::ONE;
        for _ in 0..half {
            table.push(p);
            p *= w;
        }
        let stages: Vec<u32> = if dif {
            (0..log_n).rev().collect()
        } else {
            (0..log_n).collect()
        };
        radix2_stages(a, log_n, &stages, dif, &|e| table[e as usize]);
    }

    fn device_table(log_n: u32) -> Vec<Scalar> {
        let count = if log_n == 0 { 1 } else { 1usize << (log_n - 1) };
        let w = omega(log_n);
        let mut v = Vec::with_capacity(count);
        let mut p = Scalar::ONE;
        for _ in 0..count {
            v.push(p);
            p *= w;
        }
        v
    }

    #[test]
    fn reference_is_the_dft() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for log_n in 0..=5u32 {
            let n = 1usize << log_n;
            for inverse in [false, true] {
                let a = random(&mut rng, n);
                let dft: Vec<Scalar> = (0..n)
                    .map(|k| {
                        (0..n).fold(Scalar::ZERO, |acc, i| {
                            acc + a[i] * root_pow(log_n, (i * k) as u64, inverse)
                        })
                    })
                    .collect();
                let mut dif = a.clone();
                reference(&mut dif, log_n, true, inverse);
                for k in 0..n {
                    assert_eq!(
                        dif[bitrev(k, log_n)],
                        dft[k],
                        "DIF 2^{log_n} inverse {inverse}"
                    );
                }
                let mut dit: Vec<Scalar> = (0..n).map(|i| a[bitrev(i, log_n)]).collect();
                reference(&mut dit, log_n, false, inverse);
                assert_eq!(dit, dft, "DIT 2^{log_n} inverse {inverse}");
            }
        }
    }

    #[test]
    fn scatter_is_a_bijection_without_window_bits() {
        for nb in 1..=10u32 {
            for w in 1..=3u32.min(nb) {
                for p in 0..=(nb - w) {
                    let mut seen = std::collections::HashSet::new();
                    for u in 0..(1u32 << (nb - w)) {
                        let e = scatter(u, p, w, nb);
                        assert!(
                            e < (1 << nb) && e & (((1 << w) - 1) << p) == 0,
                            "nb {nb} w {w} p {p} u {u}: {e}"
                        );
                        assert!(seen.insert(e));
                    }
                }
            }
        }
    }

    /// The model of ntt_pass_v2 against the plain radix-2 transform, every size to 2^18 (two
    /// passes; the radix-8 path from 2^16 on: 9 and 8 stages, 1, 2 or 4 low indices, 1, 2 or 4
    /// groups of higher bits), both directions, forward and inverse; and the bank claims.
    #[test]
    fn v2_model_matches_radix2_up_to_2p18() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5eed);
        let mut banks = Banks::default();
        let mut radix8_passes = 0;
        for log_n in 0..=18u32 {
            let n = 1usize << log_n;
            let table = device_table(log_n);
            for dif in [true, false] {
                for inverse in [false, true] {
                    radix8_passes += plan(log_n, dif)
                        .iter()
                        .filter(|&&(b, t)| {
                            Pass {
                                log_n,
                                b,
                                t,
                                dif,
                                inverse,
                            }
                            .radix8()
                        })
                        .count();
                    let a = random(&mut rng, n);
                    let mut want = a.clone();
                    reference(&mut want, log_n, dif, inverse);
                    let mut got = a;
                    ntt_v2(&mut got, &table, log_n, dif, inverse, &mut banks);
                    assert!(
                        got == want,
                        "v2 model, 2^{log_n} dif {dif} inverse {inverse}"
                    );
                }
            }
        }
        assert!(radix8_passes > 0);
        let mut seen: Vec<_> = banks.worst.iter().collect();
        seen.sort();
        eprintln!("bank conflicts (worst words per bank in a warp access, by kind and block size): {seen:?}");
        // Blocks of 2^8 elements and more load and store without conflicts; twiddle reads are
        // conflict-free everywhere, and so are the radix-8 path's rounds (blocks of 2^10).
        assert_eq!(banks.worst("global<->shared data", 256), 1);
        assert_eq!(banks.worst("round twiddles (radix-8 path)", 0), 1);
        assert_eq!(banks.worst("round twiddles (run-time path)", 0), 1);
        assert_eq!(banks.worst("round data (radix-8 path)", 0), 1);
    }

    /// From 2^16 on, every pass of 8 or 9 stages gets a block of 2^10 elements: the radix-8 path.
    #[test]
    fn v2_shapes_of_large_transforms() {
        for log_n in 16..=27u32 {
            for dif in [true, false] {
                for (b, t) in plan(log_n, dif) {
                    let pass = Pass {
                        log_n,
                        b,
                        t,
                        dif,
                        inverse: false,
                    };
                    let (lg_l, lg_s) = (pass.lg_l(), pass.lg_s());
                    assert!(
                        lg_l <= b && b + t + lg_s <= log_n,
                        "2^{log_n} ({b}, {t}): {lg_l} {lg_s}"
                    );
                    assert_eq!(
                        pass.radix8(),
                        t >= 8,
                        "2^{log_n} ({b}, {t}): lgL {lg_l} lgS {lg_s}"
                    );
                }
            }
        }
        // The passes of 2^27: (18, 9) with 2 low indices (no higher bits), (9, 9) and (0, 9)
        // with 2 groups; low indices first: 2 low indices in (9, 9) too.
        let shapes = |g: bool| -> Vec<(u32, u32)> {
            plan(27, true)
                .iter()
                .map(|&(b, t)| v2_shape_of(27, b, t, g))
                .collect()
        };
        assert_eq!(shapes(true), vec![(1, 0), (0, 1), (0, 1)]);
        assert_eq!(shapes(false), vec![(1, 0), (1, 0), (0, 1)]);
    }

    /// The blocks of 2^10 elements (t = 9; two low indices, or two groups) are conflict-free in
    /// every round.
    #[test]
    fn v2_blocks_of_2p10_are_bank_conflict_free() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        // 2^18: no higher bits, so two low indices; 2^19: two groups of the higher bits.
        for (log_n, lg_l) in [(18, 1), (19, 0)] {
            for dif in [true, false] {
                let pass = Pass {
                    log_n,
                    b: 9,
                    t: 9,
                    dif,
                    inverse: false,
                };
                assert!(pass.radix8() && pass.elems() == 1024 && pass.lg_l() == lg_l);
                let mut data = random(&mut rng, 1 << log_n);
                let mut banks = Banks::default();
                pass.run_block(&mut data, &PowTable::new(log_n), 5, Some(&mut banks));
                assert!(
                    banks.worst.values().all(|&d| d == 1),
                    "2^{log_n}: {:?}",
                    banks.worst
                );
            }
        }
    }

    /// Single passes of the large transforms (2^20 .. 2^27: three passes, blocks with both high
    /// and low indices, twiddle indices up to 2^26), a few blocks each (first, second, middle,
    /// last, one at random), against the radix-2 stages of the pass on the same elements.
    #[test]
    fn v2_model_blocks_of_large_transforms() {
        let mut rng = ChaCha20Rng::seed_from_u64(0xb10c);
        let mut radix8 = 0;
        for log_n in [20u32, 21, 22, 23, 24, 25, 26, 27] {
            let table = PowTable::new(log_n);
            for dif in [true, false] {
                for inverse in [false, true] {
                    for (b, t) in plan(log_n, dif) {
                        let pass = Pass {
                            log_n,
                            b,
                            t,
                            dif,
                            inverse,
                        };
                        radix8 += usize::from(pass.radix8());
                        let blocks = pass.blocks();
                        let mut picks =
                            vec![0, 1, blocks - 1, blocks / 2 + 1, rng.next_u64() % blocks];
                        picks.sort_unstable();
                        picks.dedup();
                        for blk in picks {
                            let idx = pass.block_elements(blk);
                            let vals = random(&mut rng, idx.len());
                            let pos: HashMap<u64, usize> =
                                idx.iter().enumerate().map(|(k, &g)| (g, k)).collect();
                            let mut data: HashMap<u64, Scalar> =
                                idx.iter().copied().zip(vals.iter().copied()).collect();
                            pass.run_block(&mut data, &table, blk, None);
                            let got: Vec<Scalar> = idx.iter().map(|g| data[g]).collect();
                            // Reference: the pass's global stages on the block's elements.
                            let mut want = vals;
                            let stages: Vec<u32> = if dif {
                                (b..b + t).rev().collect()
                            } else {
                                (b..b + t).collect()
                            };
                            for &s in &stages {
                                let h = 1u64 << s;
                                for (k, &g) in idx.iter().enumerate() {
                                    if g & h != 0 {
                                        continue;
                                    }
                                    let k2 = pos[&(g + h)];
                                    let w =
                                        root_pow(log_n, (g & (h - 1)) << (log_n - s - 1), inverse);
                                    let (x, y) = (want[k], want[k2]);
                                    if dif {
                                        want[k] = x + y;
                                        want[k2] = (x - y) * w;
                                    } else {
                                        let yw = y * w;
                                        want[k] = x + yw;
                                        want[k2] = x - yw;
                                    }
                                }
                            }
                            assert!(
                                got == want,
                                "2^{log_n} pass ({b}, {t}) block {blk} dif {dif} inverse {inverse}"
                            );
                        }
                    }
                }
            }
        }
        assert!(radix8 > 0);
    }
}
