//! The CUDA field and curve code (cuda-src/field.cuh, fr.cuh, fp.cuh, fp2.cuh, curve.cuh), built
//! for the host with the system C++ compiler (engine/tests/host_math/shim.h emulates the PTX
//! carry chains), against blstrs: Fr, Fp, Fp2 add/sub/mul/square/negate on random values and the
//! edges 0, 1, −1; Fr out of Montgomery form; G1 and G2 mixed and full XYZZ additions and
//! doublings with the point at infinity, equal and opposite points; and the MSM kernels
//! (cuda-src/msm.cu: digits, sort, equal-share accumulation with its fix-up, bucket reduction and
//! its pair rounds; batch_add.cu's fold for batch addition) run one emulated thread at a time under explicit
//! plans, and batch addition likewise; the NTT pass kernels (cuda-src/ntt.cu, each block's threads
//! concurrent at real barriers) under the device's launch plan against the CPU FFT, and the fused
//! H step (`h::h_steps` with cuda-src/h.cu) against the CPU prover's. No GPU needed: the kernels' arithmetic and
//! indexing are checked on every machine, and a change to them can be tried here before it costs
//! device time. (The GPU tests run the same code on the device.)

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::gpu::msm::{MsmPlan, MsmStep};
use cuzk_engine::gpu::points::Curve as Kind;
use cuzk_engine::gpu::points::{g1_from_xyzz, g2_from_xyzz};
use cuzk_engine::gpu::{as_bytes, as_bytes_mut};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The tuning switches of the headers (each variant is checked like the default build).
const VARIANTS: [&str; 5] = [
    "",
    "-DCUZK_MUL_ALT=0",
    "-DCUZK_MUL_ALT=0 -DCUZK_FR_FAST_REDUCE=1",
    "-DCUZK_FP_MUL_CALL=1",
    "-DCUZK_FP_SQR=1",
];

/// The NTT program: the field headers, `bitrev.cuh`, `cuda-src/ntt.cu` (every block's threads run
/// concurrently: `kernels_shim.h`, `launch_blocks`) and `h.cu`, and `ntt_driver.cpp`.
const NTT: &[&str] = &[
    "tests/host_math/shim.h",
    "tests/host_math/kernels_shim.h",
    "../cuda-src/field.cuh",
    "../cuda-src/fr.cuh",
    "../cuda-src/bitrev.cuh",
    "../cuda-src/ntt.cu",
    "../cuda-src/h.cu",
    "tests/host_math/ntt_driver.cpp",
];

/// The field and curve program: the headers and `driver.cpp`.
const MATH: &[&str] = &[
    "tests/host_math/shim.h",
    "../cuda-src/field.cuh",
    "../cuda-src/fr.cuh",
    "../cuda-src/fr52.cuh",
    "../cuda-src/fp.cuh",
    "../cuda-src/fp2.cuh",
    "../cuda-src/curve.cuh",
    "tests/host_math/driver.cpp",
];
/// The MSM program: the headers, `cuda-src/msm.cu` and `batch_add.cu` with their launches
/// emulated one thread at a time (`kernels_shim.h`), and `msm_driver.cpp`.
const MSM: &[&str] = &[
    "tests/host_math/shim.h",
    "tests/host_math/kernels_shim.h",
    "../cuda-src/field.cuh",
    "../cuda-src/fr.cuh",
    "../cuda-src/fp.cuh",
    "../cuda-src/fp2.cuh",
    "../cuda-src/curve.cuh",
    "../cuda-src/msm.cu",
    "../cuda-src/batch_add.cu",
    "tests/host_math/msm_driver.cpp",
];

/// The host program made of `parts` with `flags`, built once per test process; None (after
/// saying why) without a compiler.
fn program(parts: &'static [&'static str], flags: &'static str) -> Option<PathBuf> {
    type Built = HashMap<(usize, &'static str), Option<PathBuf>>;
    static P: OnceLock<Mutex<Built>> = OnceLock::new();
    let mut built = P
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    built
        .entry((parts.as_ptr() as usize, flags))
        .or_insert_with(|| build(parts, flags))
        .clone()
}

fn build(parts: &[&str], flags: &str) -> Option<PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    if Command::new(&cxx)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        eprintln!("SKIPPED cuda_math_on_host: no C++ compiler ({cxx})");
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut src = String::new();
    for f in parts {
        // A kernel's `extern __shared__` array is the driver's global array on the host (the
        // shim makes other `__shared__` arrays function-local statics).
        let text =
            std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("reading {f}: {e}"));
        src.push_str(&text.replace("extern __shared__", "extern"));
        src.push('\n');
    }
    // Built under the target directory, named by the source's hash (a rebuild only when it changes).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&src, &mut h);
    std::hash::Hash::hash(flags, &mut h);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cuzk-host-math");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(format!("math-{:016x}", std::hash::Hasher::finish(&h)));
    if exe.exists() {
        return Some(exe);
    }
    let pid = std::process::id();
    let (cpp, tmp) = (
        dir.join(format!("math-{pid}.cpp")),
        dir.join(format!("math-{pid}.exe")),
    );
    std::fs::write(&cpp, src).unwrap();
    let out = Command::new(&cxx)
        .args([
            "-std=c++17",
            "-O1",
            "-frounding-math",
            "-Wno-unknown-pragmas",
        ])
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&tmp)
        .arg(&cpp)
        .output()
        .expect("running the C++ compiler");
    assert!(
        out.status.success(),
        "the CUDA headers do not build for the host ({flags}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(&cpp);
    std::fs::rename(&tmp, &exe).unwrap();
    Some(exe)
}

/// Runs the host program `exe` on `request` (its stdin); returns its stdout, after checking that
/// it succeeded (`what` names the request in the failure).
fn exchange(exe: &Path, request: &[u8], what: &str) -> Vec<u8> {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the host program");
    child.stdin.take().unwrap().write_all(request).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what}");
    out.stdout
}

/// Little-endian bytes of `words`.
fn le_words(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// One request: `kind`, `op`, `n` values of `a` and of `b`; returns the n results' bytes.
fn run(exe: &Path, kind: u32, op: u32, n: usize, a: &[u8], b: &[u8], out_bytes: usize) -> Vec<u8> {
    let req = [
        le_words(&[kind, op]),
        (n as u64).to_le_bytes().to_vec(),
        a.to_vec(),
        b.to_vec(),
    ]
    .concat();
    let out = exchange(
        exe,
        &req,
        &format!("host program failed on kind {kind} op {op}"),
    );
    assert_eq!(out.len(), n * out_bytes);
    out
}

fn rng() -> ChaCha20Rng {
    let seed = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().next_u64());
    eprintln!("cuda_math_on_host: seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

fn with_edges<T: Copy>(mut v: Vec<T>, edges: &[T]) -> Vec<T> {
    for (i, e) in edges.iter().enumerate() {
        v[i] = *e;
    }
    v
}

fn check_field<T: Field + Copy + std::fmt::Debug>(
    exe: &Path,
    kind: u32,
    name: &str,
    a: &[T],
    b: &[T],
) {
    type Op<T> = fn(&T, &T) -> T;
    let ops: [Op<T>; 5] = [
        |x, y| *x + y,
        |x, y| *x - y,
        |x, y| *x * y,
        |x, _| x.square(),
        |x, _| -*x,
    ];
    let size = std::mem::size_of::<T>();
    for (op, f) in ops.iter().enumerate() {
        let got = run(
            exe,
            kind,
            op as u32,
            a.len(),
            as_bytes(a),
            as_bytes(b),
            size,
        );
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let want = f(x, y);
            assert_eq!(
                &got[i * size..(i + 1) * size],
                as_bytes(std::slice::from_ref(&want)),
                "{name} op {op} at {i}: {x:?}, {y:?}"
            );
        }
    }
}

#[test]
fn field_arithmetic_matches_blstrs() {
    for flags in VARIANTS {
        let Some(exe) = program(MATH, flags) else {
            return;
        };
        eprintln!("variant [{flags}]");
        check_fields(&exe);
    }
}

fn check_fields(exe: &Path) {
    let exe = exe.to_path_buf();
    let mut rng = rng();
    let n = 1000;
    let fa = with_edges(
        (0..n).map(|_| Scalar::random(&mut rng)).collect(),
        &[Scalar::ZERO, Scalar::ONE, -Scalar::ONE, -Scalar::ONE],
    );
    let fb = with_edges(
        (0..n).map(|_| Scalar::random(&mut rng)).collect(),
        &[-Scalar::ONE, Scalar::ZERO, -Scalar::ONE, Scalar::ONE],
    );
    check_field(&exe, 0, "Fr", &fa, &fb);
    let canon = run(&exe, 0, 5, n, as_bytes(&fa), as_bytes(&fb), 32);
    for (i, x) in fa.iter().enumerate() {
        assert_eq!(
            &canon[32 * i..32 * i + 32],
            &x.to_repr()[..],
            "Fr from_mont at {i}"
        );
    }
    // The FP64-pipe product (fr52.cuh): one product, and three fed back unreduced.
    for (op, pow) in [(0u32, 1u64), (1, 3)] {
        let got = run(&exe, 5, op, n, as_bytes(&fa), as_bytes(&fb), 32);
        for (i, (x, y)) in fa.iter().zip(&fb).enumerate() {
            let want = *x * y.pow_vartime([pow]);
            assert_eq!(
                &got[32 * i..32 * i + 32],
                as_bytes(std::slice::from_ref(&want)),
                "Fr52 x·y^{pow} at {i}: {x:?}, {y:?}"
            );
        }
    }
    let pa = with_edges(
        (0..n).map(|_| Fp::random(&mut rng)).collect(),
        &[Fp::ZERO, Fp::ONE, -Fp::ONE, -Fp::ONE],
    );
    let pb = with_edges(
        (0..n).map(|_| Fp::random(&mut rng)).collect(),
        &[-Fp::ONE, Fp::ZERO, -Fp::ONE, Fp::ONE],
    );
    check_field(&exe, 1, "Fp", &pa, &pb);
    // (-1, -1): the Karatsuba sums c0 + c1 reach 2p - 2, the most an unreduced sum may hold.
    let m1 = Fp2::new(-Fp::ONE, -Fp::ONE);
    let qa: Vec<Fp2> = with_edges(
        (0..n).map(|_| Fp2::random(&mut rng)).collect(),
        &[Fp2::ZERO, Fp2::ONE, -Fp2::ONE, m1, m1],
    );
    let qb: Vec<Fp2> = with_edges(
        (0..n).map(|_| Fp2::random(&mut rng)).collect(),
        &[-Fp2::ONE, Fp2::ZERO, -Fp2::ONE, m1, Fp2::ONE],
    );
    check_field(&exe, 2, "Fp2", &qa, &qb);
}

/// XYZZ bytes of `p` with a random Z (x = X/ZZ, y = Y/ZZZ); all zeros for infinity.
fn xyzz<F: Field + Copy>(p: Option<(F, F)>, rng: &mut impl RngCore) -> Vec<F> {
    match p {
        None => vec![F::ZERO; 4],
        Some((x, y)) => {
            let z = F::random(&mut *rng);
            let (zz, zzz) = (z.square(), z.square() * z);
            vec![x * zz, y * zzz, zz, zzz]
        }
    }
}

/// Mixed and full additions and doublings over one curve: random pairs, then the infinity,
/// equal-point and opposite-point cases.
macro_rules! check_curve {
    ($exe:expr, $rng:expr, $kind:expr, $proj:ty, $aff:ty, $fq:ty, $from:ident, $name:expr) => {{
        let n = 200;
        let mut acc: Vec<$proj> = (0..n).map(|_| <$proj>::random(&mut *$rng)).collect();
        let mut pts: Vec<$proj> = (0..n).map(|_| <$proj>::random(&mut *$rng)).collect();
        acc[0] = <$proj>::identity(); // ∞ + P
        pts[1] = <$proj>::identity(); // A + ∞
        acc[2] = <$proj>::identity();
        pts[2] = <$proj>::identity(); // ∞ + ∞
        pts[3] = acc[3]; // A + A: the doubling case
        pts[4] = -acc[4]; // A − A = ∞
        let coords = |p: &$proj| -> Option<($fq, $fq)> {
            let a: $aff = p.to_affine();
            if bool::from(a.is_identity()) {
                None
            } else {
                Some((a.x(), a.y()))
            }
        };
        let a_bytes: Vec<$fq> = acc
            .iter()
            .flat_map(|p| xyzz(coords(p), &mut *$rng))
            .collect();
        let aff: Vec<$aff> = pts.iter().map(|p| p.to_affine()).collect();
        let b_xyzz: Vec<$fq> = pts
            .iter()
            .flat_map(|p| xyzz(coords(p), &mut *$rng))
            .collect();
        let w = 4 * std::mem::size_of::<$fq>();
        for (op, b) in [
            (0u32, as_bytes(&aff)),
            (1, as_bytes(&b_xyzz)),
            (2, as_bytes(&aff)),
            (3, as_bytes(&aff)),
        ] {
            let got = run($exe, $kind, op, n, as_bytes(&a_bytes), b, w);
            for i in 0..n {
                let want = match op {
                    0 | 1 => acc[i] + pts[i],
                    2 => acc[i].double(),
                    _ => pts[i].double(),
                };
                assert_eq!(
                    $from(&got[i * w..(i + 1) * w]),
                    want,
                    "{} op {op} at {i}",
                    $name
                );
            }
        }
    }};
}

#[test]
fn curve_arithmetic_matches_blstrs() {
    for flags in [
        "",
        "-DCUZK_MUL_ALT=0",
        "-DCUZK_FP_MUL_CALL=1",
        "-DCUZK_FP_SQR=1",
    ] {
        let Some(exe) = program(MATH, flags) else {
            return;
        };
        eprintln!("variant [{flags}]");
        let mut rng = rng();
        check_curve!(
            &exe,
            &mut rng,
            3,
            G1Projective,
            G1Affine,
            Fp,
            g1_from_xyzz,
            "G1"
        );
        check_curve!(
            &exe,
            &mut rng,
            4,
            G2Projective,
            G2Affine,
            Fp2,
            g2_from_xyzz,
            "G2"
        );
    }
}

/// `Σ_w 2^(c·w) · windows[w]`.
fn combine<G: Group>(windows: Vec<G>, c: u32) -> G {
    windows.into_iter().rev().fold(G::identity(), |acc, w| {
        (0..c).fold(acc, |a, _| a.double()) + w
    })
}

/// The words of MSM steps for the host program (`msm_driver.cpp`): tag, a, b each.
fn msm_step_words(steps: &[MsmStep]) -> Vec<u32> {
    steps
        .iter()
        .flat_map(|s| match *s {
            MsmStep::Histogram { w0, w1 } => [0, w0, w1],
            MsmStep::Offsets => [1, 0, 0],
            MsmStep::Scatter { w0, w1 } => [2, w0, w1],
            MsmStep::ScatterTwoPass { w0, w1, .. } => [3, w0, w1],
            MsmStep::Accumulate => [4, 0, 0],
            MsmStep::FoldHeads { round } => [5, round, 0],
            MsmStep::Fixup { folded } => [6, u32::from(folded), 0],
            MsmStep::BucketReduce => [7, 0, 0],
            MsmStep::PairRound { m } => [8, m, 0],
        })
        .collect()
}

/// The MSM's kernels on the host under the plan (c, points per thread) and the device's own step
/// list (`MsmPlan::steps_with`), the sort in one pass or in two, against blstrs. The windows go
/// two a launch (the device groups them by L2 size; this covers the grouping); kind 5 (lockstep)
/// takes the serial fix-up and the others the tree fold first, so both stay covered.
#[allow(clippy::too_many_arguments)]
fn host_msm(
    exe: &Path,
    curve: u32,
    c: u32,
    per: u32,
    live: u64,
    two_pass: bool,
    bases: &[u8],
    scalars: &[Scalar],
) -> Vec<u8> {
    let n = scalars.len();
    let plan = MsmPlan::with_window(n as u64, if curve == 2 { Kind::G2 } else { Kind::G1 }, c)
        .with_live(live)
        .with_share(per);
    let steps = plan.steps_with(2, two_pass, curve != 5);
    let head = [
        per,
        plan.segments,
        plan.sort_bin_bits(),
        plan.windows,
        steps.len() as u32,
        plan.stride() as u32,
    ];
    let req = [
        le_words(&[curve, c]),
        (n as u64).to_le_bytes().to_vec(),
        le_words(&head),
        le_words(&msm_step_words(&steps)),
        bases.to_vec(),
        as_bytes(scalars).to_vec(),
    ]
    .concat();
    let out = exchange(
        exe,
        &req,
        &format!("host MSM failed (curve {curve}, c = {c}, {per} per thread)"),
    );
    assert_eq!(
        out.len(),
        plan.windows as usize * if curve == 2 { 384 } else { 192 }
    );
    out
}

#[test]
fn msm_kernels_match_blstrs_on_the_host() {
    let Some(exe) = program(MSM, "") else { return };
    let mut rng = rng();
    let n = 600;
    let mut pts: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
    pts[7] = G1Projective::identity();
    pts[8] = pts[9]; // duplicate bases
    pts[10] = -pts[11]; // opposite bases
    let bases: Vec<G1Affine> = pts.iter().map(|p| p.to_affine()).collect();
    let mut s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    s[0] = Scalar::ZERO;
    s[1] = Scalar::ONE;
    s[2] = -Scalar::ONE;
    s[9] = s[8];
    s[11] = s[10];
    let skewed = vec![s[3]; n]; // one bucket per window, spilling over every share
                                // A witness tail: mostly zero (the ones are in the bitmap), a few full scalars and small
                                // values, so that each window has far fewer digits than points and its shares shrink
                                // (`window_share`); and no digit at all.
    let sparse: Vec<Scalar> = (0..n)
        .map(|i| match i % 41 {
            0 => s[i],
            7 if i % 3 == 0 => Scalar::from(i as u64),
            _ => Scalar::ZERO,
        })
        .collect();
    let zeros = vec![Scalar::ZERO; n];
    for sc in [&s, &skewed, &sparse, &zeros] {
        let want: G1Projective = pts.iter().zip(sc.iter()).map(|(p, k)| p * k).sum();
        // The sorted lists sized for every point, and for exactly the nonzero scalars (as a
        // counted witness tail plans them: `MsmPlan::sparse`).
        let nonzero = sc.iter().filter(|k| !bool::from(k.is_zero())).count() as u64;
        for live in [n as u64, nonzero] {
            for (c, per) in [(4, 1), (5, 7), (9, 3), (13, 16), (16, 600), (16, 2)] {
                // Kind 1: the 128-thread accumulation; kind 5: the lockstep one (whole blocks of
                // CUZK_G1_LOCKSTEP_THREADS).
                for (kind, two_pass) in [(1, false), (5, false), (1, true)] {
                    let raw = host_msm(&exe, kind, c, per, live, two_pass, as_bytes(&bases), sc);
                    let got = combine(raw.chunks_exact(192).map(g1_from_xyzz).collect(), c);
                    assert_eq!(got, want, "G1 MSM on the host (kind {kind}, two-pass sort {two_pass}), c = {c}, {per} points per thread, lists of {live}");
                }
            }
        }
    }
    let n = 120;
    let pts: Vec<G2Projective> = (0..n).map(|_| G2Projective::random(&mut rng)).collect();
    let bases: Vec<G2Affine> = pts.iter().map(|p| p.to_affine()).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let want: G2Projective = pts.iter().zip(s.iter()).map(|(p, k)| p * k).sum();
    for (c, per) in [(4, 5), (11, 1)] {
        for two_pass in [false, true] {
            let raw = host_msm(&exe, 2, c, per, n as u64, two_pass, as_bytes(&bases), &s);
            let got = combine(raw.chunks_exact(384).map(g2_from_xyzz).collect(), c);
            assert_eq!(
                got, want,
                "G2 MSM on the host (two-pass sort {two_pass}), c = {c}, {per} points per thread"
            );
        }
    }
}

/// Batch addition and the fold on the host: the sum of the bases whose bit is set.
fn host_batch_add(
    exe: &Path,
    curve: u32,
    wpt: u32,
    bases: &[u8],
    bits: &[u64],
    n: usize,
) -> Vec<u8> {
    let req = [
        le_words(&[curve + 2, 0]),
        (n as u64).to_le_bytes().to_vec(),
        le_words(&[wpt]),
        bases.to_vec(),
        as_bytes(bits).to_vec(),
    ]
    .concat();
    exchange(exe, &req, "host batch addition failed")
}

#[test]
fn batch_addition_matches_blstrs_on_the_host() {
    let Some(exe) = program(MSM, "") else { return };
    let mut rng = rng();
    for n in [1usize, 63, 64, 65, 1000, 4099] {
        let mut pts: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
        if n > 10 {
            pts[3] = G1Projective::identity();
            pts[5] = pts[4]; // a doubling
            pts[7] = -pts[6]; // a cancellation
        }
        let bases: Vec<G1Affine> = pts.iter().map(|p| p.to_affine()).collect();
        let mut bits: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.next_u64()).collect();
        bits[0] |= 0xff; // the planted cases are selected
                         // Bits past n are set too: they must be ignored.
        if n % 64 != 0 {
            *bits.last_mut().unwrap() |= !0u64 << (n % 64);
        }
        let want: G1Projective = (0..n)
            .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
            .map(|i| pts[i])
            .sum();
        for wpt in [1u32, 3, 64] {
            let got = g1_from_xyzz(&host_batch_add(&exe, 1, wpt, as_bytes(&bases), &bits, n));
            assert_eq!(
                got, want,
                "G1 batch addition of {n} points, {wpt} words per thread"
            );
        }
    }
    let n: usize = 300;
    let pts: Vec<G2Projective> = (0..n).map(|_| G2Projective::random(&mut rng)).collect();
    let bases: Vec<G2Affine> = pts.iter().map(|p| p.to_affine()).collect();
    let bits: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.next_u64()).collect();
    let want: G2Projective = (0..n)
        .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
        .map(|i| pts[i])
        .sum();
    assert_eq!(
        g2_from_xyzz(&host_batch_add(&exe, 2, 2, as_bytes(&bases), &bits, n)),
        want,
        "G2 batch addition"
    );
}

/// One launch of the NTT program (`ntt_driver.cpp`) over its buffers A, B, C.
enum Op {
    /// A pass of `ntt::pass_launches` on a buffer (dif, inverse, buffer, and the buffer a
    /// `natural` pass writes to).
    Pass(cuzk_engine::gpu::ntt::PassLaunch, bool, bool, u32, u32),
    /// `scale_permute`: out, input, from the to-coset table (else the from-coset one), rev_in, out_perm.
    Scale(u32, u32, bool, bool, bool),
    /// `h_product`.
    Product,
    /// `h_finish`.
    Finish,
}

/// `launches` of one transform of buffer `x` (a `natural` pass writing buffer `out`, 3: none).
fn pass_ops(
    launches: Vec<cuzk_engine::gpu::ntt::PassLaunch>,
    dif: bool,
    inverse: bool,
    x: u32,
    out: u32,
) -> Vec<Op> {
    launches
        .into_iter()
        .map(|l| Op::Pass(l, dif, inverse, x, if l.natural { out } else { 3 }))
        .collect()
}

/// The passes of one transform of buffer `x`, as the device runs them.
fn ntt_ops(
    log_n: u32,
    kernel: cuzk_engine::gpu::ntt::NttKernel,
    dif: bool,
    inverse: bool,
    x: u32,
) -> Vec<Op> {
    pass_ops(
        cuzk_engine::gpu::ntt::pass_launches(log_n, dif, kernel),
        dif,
        inverse,
        x,
        3,
    )
}

/// The passes of a natural-order transform of buffer `x` into buffer `out`, as the device runs
/// them (`ntt::natural_launches`).
fn natural_ops(
    log_n: u32,
    kernel: cuzk_engine::gpu::ntt::NttKernel,
    inverse: bool,
    x: u32,
    out: u32,
) -> Vec<Op> {
    pass_ops(
        cuzk_engine::gpu::ntt::natural_launches(log_n, kernel),
        true,
        inverse,
        x,
        out,
    )
}

/// Runs `ops` in the NTT program on A, B, C (2^log_n each) with the H step's tables for 2^log_n;
/// returns A, B, C afterwards, as blst's Montgomery bytes.
fn run_ntt_program(exe: &Path, log_n: u32, ops: &[Op], bufs: [&[Scalar]; 3]) -> Vec<Vec<u8>> {
    use cuzk_engine::gpu::h::{h_constants, PowerTables};
    use cuzk_engine::gpu::ntt::root_powers;
    let n = 1usize << log_n;
    let mut req = le_words(&[log_n, ops.len() as u32]);
    for op in ops {
        req.extend(match *op {
            Op::Pass(l, dif, inverse, x, out) => le_words(&[
                0,
                l.kernel as u32,
                l.blocks as u32,
                l.threads,
                l.smem,
                l.b,
                l.t,
                l.lg_l,
                l.lg_s,
                u32::from(dif),
                u32::from(inverse),
                x,
                out,
            ]),
            Op::Scale(out, input, to, rev, perm) => le_words(&[
                1,
                out,
                input,
                u32::from(!to),
                u32::from(rev),
                u32::from(perm),
            ]),
            Op::Product => le_words(&[2]),
            Op::Finish => le_words(&[3]),
        });
    }
    req.extend_from_slice(as_bytes(&root_powers(log_n)));
    let ((g, f), (g_inv, f_inv), kappa) = h_constants(log_n).unwrap();
    let (to_lo, to_hi, lo_bits) = PowerTables::values(g, f, log_n);
    let (from_lo, from_hi, _) = PowerTables::values(g_inv, f_inv, log_n);
    req.extend(le_words(&[lo_bits]));
    for t in [&to_lo, &to_hi, &from_lo, &from_hi] {
        req.extend_from_slice(as_bytes(t));
    }
    req.extend_from_slice(as_bytes(&[kappa]));
    for b in bufs {
        assert_eq!(b.len(), n);
        req.extend_from_slice(as_bytes(b));
    }
    let out = exchange(exe, &req, &format!("NTT program failed at 2^{log_n}"));
    assert_eq!(out.len(), 3 * 32 * n);
    out.chunks_exact(32 * n).map(|c| c.to_vec()).collect()
}

/// Index of the first element where `got` (Montgomery bytes) differs from `want`.
fn first_difference(got: &[u8], want: &[Scalar]) -> Option<usize> {
    got.chunks_exact(32)
        .zip(as_bytes(want).chunks_exact(32))
        .position(|(g, w)| g != w)
}

/// The NTT pass kernels (cuda-src/ntt.cu: `ntt_pass`, `ntt_pass_v2` and `ntt_twiddles`) under the
/// launch plan the device uses (`ntt::pass_launches`), every block's threads running
/// concurrently with real barriers, against the CPU FFT: DIF (natural in, bit-reversed out) and
/// DIT (bit-reversed in, natural out), forward and inverse (unscaled), at sizes that reach each
/// kernel's paths (v2: run-time passes, and the radix-8 blocks of 2^10 elements with t = 8 and 9,
/// twiddle rows of 512 and 1024, low indices and groups of higher bits as at 2^27).
#[test]
fn ntt_kernels_match_the_cpu_fft_on_the_host() {
    use cuzk_engine::fft::Domain;
    use cuzk_engine::gpu::ntt::{natural_launches, pass_launches, NttKernel};
    let Some(exe) = program(NTT, "") else { return };
    let mut rng = rng();
    let mut cases: Vec<(u32, NttKernel, bool, bool)> = Vec::new();
    for log_n in [0u32, 1, 2, 5, 10, 13, 16] {
        for kernel in NttKernel::ALL {
            for (dif, inverse) in [(true, false), (true, true), (false, false), (false, true)] {
                cases.push((log_n, kernel, dif, inverse));
            }
        }
    }
    // 2^18: the top pass with two low indices and the bottom one with two groups, as at 2^27
    // (the directions the H step runs).
    cases.push((18, NttKernel::V2, true, true));
    cases.push((18, NttKernel::V2, false, false));
    // The radix-8 blocks (2^10 elements, 128 threads, t = 8 or 9) with both twiddle-row sizes,
    // low indices and groups: the cases must reach them all.
    let mut shapes = HashSet::new();
    for &(log_n, kernel, dif, _) in &cases {
        for l in pass_launches(log_n, dif, kernel) {
            if l.kernel == NttKernel::V2
                && l.threads == 128
                && l.t + l.lg_l + l.lg_s == 10
                && (l.t == 8 || l.t == 9)
            {
                shapes.insert((
                    l.t,
                    (((1u32 << l.t) - 1) << l.lg_l) > 512,
                    l.lg_l > 0,
                    l.lg_s > 0,
                ));
            }
        }
    }
    for want in [
        (8, true, true, false),
        (8, false, false, true),
        (9, true, true, false),
        (9, false, false, true),
    ] {
        assert!(shapes.contains(&want), "no case reaches the radix-8 v2 block (t, wide twiddle rows, low indices, groups) = {want:?}: {shapes:?}");
    }
    for (log_n, kernel, dif, inverse) in cases {
        let n = 1usize << log_n;
        let x: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let input = if dif { x.clone() } else { bitrev(&x) };
        let zero = vec![Scalar::ZERO; n];
        let out = run_ntt_program(
            &exe,
            log_n,
            &ntt_ops(log_n, kernel, dif, inverse, 0),
            [&input, &zero, &zero],
        );
        // The CPU transform in natural order; the inverse without 1/n.
        let mut want = x.clone();
        let d = Domain::new(n).unwrap();
        if inverse {
            d.ifft(&mut want);
            let nn = Scalar::from(n as u64);
            want.iter_mut().for_each(|w| *w *= nn);
        } else {
            d.fft(&mut want);
        }
        let natural = want.clone();
        let want = if dif { bitrev(&want) } else { want };
        let bad = first_difference(&out[0], &want);
        assert!(bad.is_none(), "2^{log_n} {kernel:?} dif={dif} inverse={inverse}: first wrong element {bad:?} (launches {:?})",
            pass_launches(log_n, dif, kernel));
        // The natural-order transform (`ntt_natural`): the last pass writes B bit-reversed.
        if dif && log_n > 0 {
            let out = run_ntt_program(
                &exe,
                log_n,
                &natural_ops(log_n, kernel, inverse, 0, 1),
                [&x, &zero, &zero],
            );
            let bad = first_difference(&out[1], &natural);
            assert!(bad.is_none(), "natural-order 2^{log_n} {kernel:?} inverse={inverse}: first wrong element {bad:?} (launches {:?})",
                natural_launches(log_n, kernel));
        }
    }
}

/// `v` in bit-reversed index order.
fn bitrev(v: &[Scalar]) -> Vec<Scalar> {
    let bits = v.len().trailing_zeros();
    (0..v.len())
        .map(|i| {
            v[if bits == 0 {
                0
            } else {
                i.reverse_bits() >> (usize::BITS - bits)
            }]
        })
        .collect()
}

/// The fused H step as the device runs it (`h::h_steps`, each transform's `pass_launches`, the
/// `scale_permute`, `h_product` and `h_finish` kernels of cuda-src/h.cu) against the CPU prover's
/// `Domain::h_coefficients`, with the pass kernel the device picks at each size and with v2.
#[test]
fn h_step_matches_the_cpu_on_the_host() {
    use cuzk_engine::fft::Domain;
    use cuzk_engine::gpu::h::{h_steps, HStep};
    use cuzk_engine::gpu::ntt::NttKernel;
    let Some(exe) = program(NTT, "") else { return };
    let mut rng = rng();
    for (log_n, kernel) in [
        (1u32, None),
        (4, None),
        (11, None),
        (13, Some(NttKernel::V2)),
        (16, Some(NttKernel::V2)),
    ] {
        let kernel = kernel.unwrap_or(NttKernel::for_size(log_n));
        let n = 1usize << log_n;
        let [a, b, c]: [Vec<Scalar>; 3] =
            std::array::from_fn(|_| (0..n).map(|_| Scalar::random(&mut rng)).collect());
        let mut ops = Vec::new();
        for step in h_steps() {
            match step {
                HStep::Ntt { x, dif, inverse } => {
                    ops.extend(ntt_ops(log_n, kernel, dif, inverse, x as u32))
                }
                HStep::Scale {
                    out,
                    input,
                    to_coset,
                    rev_in,
                    out_perm,
                } => ops.push(Op::Scale(
                    out as u32,
                    input as u32,
                    to_coset,
                    rev_in,
                    out_perm,
                )),
                HStep::Product => ops.push(Op::Product),
                HStep::Finish => ops.push(Op::Finish),
            }
        }
        let out = run_ntt_program(&exe, log_n, &ops, [&a, &b, &c]);
        let want = Domain::new(n).unwrap().h_coefficients(a, b, c);
        let bad = first_difference(&out[1][..32 * (n - 1)], &want);
        assert!(
            bad.is_none(),
            "H step at 2^{log_n} with {kernel:?}: first wrong coefficient {bad:?}"
        );
    }
}

/// The recorded witness's program: the Fr headers, `cuda-src/spmv.cu`, `cuda-src/split.cu` and
/// `spmv_driver.cpp`.
const SPMV: &[&str] = &[
    "tests/host_math/shim.h",
    "tests/host_math/kernels_shim.h",
    "../cuda-src/field.cuh",
    "../cuda-src/fr.cuh",
    "../cuda-src/spmv.cu",
    "../cuda-src/split.cu",
    "../cuda-src/witness.cu",
    "tests/host_math/spmv_driver.cpp",
];

/// Random rows over `vars` variables and 3 inputs: each term's coefficient is ±1, ±2, another
/// small integer (up to the class's largest), a general value, or zero; some rows are empty; the
/// witness is random, or all zero.
#[derive(Clone)]
struct RandomRows {
    seed: u64,
    rows: usize,
    vars: usize,
    zero_witness: bool,
}

impl bellperson::Circuit<Scalar> for RandomRows {
    fn synthesize<CS: bellperson::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        use cuzk_engine::recorded::coeff::SMALL_MAX;
        use rand::Rng;
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        let value = |rng: &mut ChaCha20Rng| {
            if self.zero_witness {
                Scalar::ZERO
            } else {
                Scalar::random(rng)
            }
        };
        let mut vars = Vec::new();
        for i in 0..3 {
            let v = value(&mut rng);
            vars.push(cs.alloc_input(|| format!("in{i}"), || Ok(v))?);
        }
        for i in 0..self.vars {
            let v = value(&mut rng);
            vars.push(cs.alloc(|| format!("v{i}"), || Ok(v))?);
        }
        if !self.zero_witness {
            vars.push(CS::one());
        }
        for r in 0..self.rows {
            let mut lcs = Vec::new();
            for _ in 0..3 {
                let mut lc = bellperson::LinearCombination::zero();
                let terms = if r % 7 == 3 { 0 } else { rng.gen_range(0..6) };
                for _ in 0..terms {
                    let v = vars[rng.gen_range(0..vars.len())];
                    let small = Scalar::from(rng.gen_range(3..=SMALL_MAX as u64));
                    let c = [
                        Scalar::ONE,
                        -Scalar::ONE,
                        Scalar::from(2u64),
                        -Scalar::from(2u64),
                        small,
                        -small,
                        Scalar::random(&mut rng),
                        Scalar::ZERO,
                        Scalar::from(SMALL_MAX as u64),
                    ][rng.gen_range(0..9)];
                    lc = lc + (c, v);
                }
                lcs.push(lc);
            }
            let [a, b, c]: [_; 3] = lcs.try_into().unwrap();
            cs.enforce(|| format!("r{r}"), |_| a, |_| b, |_| c);
        }
        Ok(())
    }
}

#[test]
fn recorded_products_match_the_cpu_on_the_host() {
    use cuzk_engine::recorded::record;
    let Some(exe) = program(SPMV, "") else { return };
    let seed = rng().next_u64();
    for (rows, vars, zero_witness) in [
        (0, 0, false),
        (1, 1, false),
        (300, 50, false),
        (200, 40, true),
    ] {
        let circuit = RandomRows {
            seed,
            rows,
            vars,
            zero_witness,
        };
        let (rec, values) = record(circuit, true, 0).unwrap();
        let (inputs, aux) = values.unwrap();
        let asg = rec.assignment((inputs.clone(), aux.clone()), 0).unwrap();
        let w: Vec<Scalar> = inputs.iter().chain(&aux).copied().collect();
        for (m, want) in [&asg.a, &asg.b, &asg.c].into_iter().enumerate() {
            let (ptr, ent) = (rec.row_ptr(m), rec.entries(m));
            let hdr = [
                0,
                rec.counts().rows(),
                w.len(),
                ent.len(),
                rec.table().len(),
            ]
            .map(|n| n as u64);
            let req = [
                as_bytes(&hdr),
                as_bytes(ptr),
                as_bytes(ent),
                as_bytes(rec.table()),
                as_bytes(&w),
            ]
            .concat();
            let got = exchange(&exe, &req, &format!("spmv of {} rows", hdr[1]));
            assert_eq!(
                got,
                as_bytes(want),
                "matrix {m} of {rows} random rows (seed {seed}, zero witness {zero_witness})"
            );
        }
        // The row check (random rows are not satisfied: against c = a·b): none unsatisfied, then
        // the first of two planted bad rows.
        let n = asg.a.len();
        let ok: Vec<Scalar> = asg.a.iter().zip(&asg.b).map(|(a, b)| a * b).collect();
        let first_bad = |c: &[Scalar]| {
            let req = [
                as_bytes(&[1u64, n as u64]),
                as_bytes(&asg.a),
                as_bytes(&asg.b),
                as_bytes(c),
            ]
            .concat();
            u64::from_le_bytes(exchange(&exe, &req, "row check").try_into().unwrap())
        };
        assert_eq!(
            first_bad(&ok),
            n as u64,
            "a satisfied system has no bad row"
        );
        if n > 3 {
            let mut c = ok.clone();
            c[n - 1] += Scalar::ONE;
            c[n / 2] += Scalar::ONE;
            assert_eq!(first_bad(&c), (n / 2) as u64, "first planted bad row");
        }
        if zero_witness {
            let circuit_rows = [&asg.a, &asg.b, &asg.c].map(|v| &v[..rows]);
            assert!(
                circuit_rows
                    .iter()
                    .all(|v| v.iter().all(|x| bool::from(x.is_zero()))),
                "zero witness, non-zero product"
            );
        }
    }
}

/// The device's unpacking of a packed witness (`unpack_witness`, cuda-src/witness.cu) against
/// the witness itself and the host's model (`PackedWitness::unpack`): fresh random witnesses of
/// zeros, ones, `-1`, `2` and random values, all ones, all zeros, all others; sizes 0, under one
/// word, one word exactly and across words.
#[test]
fn an_unpacked_witness_is_the_witness_on_the_host() {
    use cuzk_engine::packed_witness::PackedWitness;
    use rand::Rng;
    let Some(exe) = program(SPMV, "") else { return };
    let mut rng = rng();
    for n in [0usize, 1, 5, 63, 64, 65, 200, 1031] {
        for kind in 0..4 {
            let w: Vec<Scalar> = (0..n)
                .map(|_| match kind {
                    1 => Scalar::ONE,
                    2 => Scalar::ZERO,
                    3 => Scalar::random(&mut rng),
                    _ => match rng.gen_range(0..5) {
                        0 => Scalar::ZERO,
                        1 => Scalar::ONE,
                        2 => -Scalar::ONE,
                        3 => Scalar::from(2u64),
                        _ => Scalar::random(&mut rng),
                    },
                })
                .collect();
            let cut = n.min(3);
            let p = PackedWitness::of(&w[..cut], &w[cut..], 3).unwrap();
            let hdr = [n as u64, p.values.len() as u64];
            let req = [
                as_bytes(&[3u64]),
                as_bytes(&hdr),
                as_bytes(&p.ones),
                as_bytes(&p.others),
                as_bytes(&p.ranks),
                as_bytes(&p.values),
            ]
            .concat();
            let out = exchange(&exe, &req, &format!("unpack of {n}"));
            assert_eq!(out, as_bytes(&w), "{n} elements of kind {kind}");
            assert_eq!(p.unpack(), w);
        }
    }
}

/// The device splits (`split_gather`) against the host's `prover::splits`, on the recorded
/// example circuits' own witnesses and on fresh random witnesses in which each value is 0, 1,
/// `-1`, `2` or random (so every word mixes ones, zeros and tails), over the query gathers
/// `spmv::query_columns` gives the device: tails and one-bitmaps word for word, the bits past
/// the end zero; sizes 0, under one word, one word exactly and across words.
#[test]
fn recorded_splits_match_the_host_on_the_host() {
    use cuzk_engine::circuits::Example;
    use cuzk_engine::gpu::spmv::query_columns;
    use cuzk_engine::prover::splits;
    use cuzk_engine::recorded::record;
    use rand::Rng;
    let Some(exe) = program(SPMV, "") else { return };
    let mut rng = rng();
    let run =
        |w: &[Scalar], idx: Option<&[u32]>, base: usize, n: usize| -> (Vec<u8>, Vec<u8>, u64) {
            let hdr = [2, w.len(), n, idx.is_some() as usize, base].map(|x| x as u64);
            let req = [
                as_bytes(&hdr),
                idx.map(as_bytes).unwrap_or(&[]),
                as_bytes(w),
            ]
            .concat();
            let mut out = exchange(&exe, &req, &format!("split of {n}"));
            let live = out.split_off(out.len() - 8);
            let ones = out.split_off(32 * n);
            (out, ones, u64::from_le_bytes(live.try_into().unwrap()))
        };
    for (name, size) in [
        ("mulchain", 16),
        ("bits", 8),
        ("bits", 64),
        ("sha256", 64),
        ("many-inputs", 40),
        ("no-aux", 0),
        ("c-only", 100),
    ] {
        let (rec, values) = record(Example::new(name, size, 1).unwrap(), true, 0).unwrap();
        let (inputs, aux) = values.unwrap();
        for random in [false, true] {
            let pick = |rng: &mut ChaCha20Rng| match rng.gen_range(0..5) {
                0 => Scalar::ZERO,
                1 | 2 => Scalar::ONE,
                3 => -Scalar::ONE,
                _ => Scalar::random(rng),
            };
            let (inputs, aux) = if random {
                let mut i: Vec<Scalar> = inputs.iter().map(|_| pick(&mut rng)).collect();
                i[0] = Scalar::ONE;
                (i, aux.iter().map(|_| pick(&mut rng)).collect::<Vec<_>>())
            } else {
                (inputs.clone(), aux.clone())
            };
            let [a_aux, b_in, b_aux] = rec.densities();
            let want = splits(&inputs, aux.clone(), [&a_aux, &b_in, &b_aux]);
            let [ga, gb] = query_columns(&rec).unwrap();
            let w: Vec<Scalar> = inputs.iter().chain(&aux).copied().collect();
            let got = [
                run(&w, None, inputs.len(), aux.len()),
                run(&w, Some(&ga), 0, ga.len()),
                run(&w, Some(&gb), 0, gb.len()),
            ];
            for ((tail, ones, live), (want, which)) in
                got.iter()
                    .zip([(&want.0, "l"), (&want.1, "a"), (&want.2, "b")])
            {
                let what = format!("{name} {size} (random witness {random}): split {which}");
                assert_eq!(tail.as_slice(), as_bytes(&want.tail), "{what}: tail");
                assert_eq!(ones.as_slice(), as_bytes(want.ones.words()), "{what}: ones");
                assert_eq!(*live, want.nonzero_tail(), "{what}: nonzero tail count");
            }
        }
    }
    // Sizes around a word: the ones of a random run of values, gathered by the identity.
    for n in [0usize, 1, 63, 64, 65, 200] {
        let w: Vec<Scalar> = (0..n + 3)
            .map(|_| [Scalar::ONE, Scalar::ZERO, Scalar::random(&mut rng)][rng.gen_range(0..3)])
            .collect();
        let want = cuzk_engine::prover::Split::new(w[3..].to_vec());
        let (tail, ones, live) = run(&w, None, 3, n);
        assert_eq!(tail.as_slice(), as_bytes(&want.tail), "{n} outputs: tail");
        assert_eq!(live, want.nonzero_tail(), "{n} outputs: nonzero tail count");
        assert_eq!(
            ones.as_slice(),
            as_bytes(want.ones.words()),
            "{n} outputs: ones"
        );
    }
}

/// The setup's fixed-base program: the curve headers, `cuda-src/fixed_base.cu` and its driver.
const FIXED_BASE: &[&str] = &[
    "tests/host_math/shim.h",
    "tests/host_math/kernels_shim.h",
    "../cuda-src/field.cuh",
    "../cuda-src/fr.cuh",
    "../cuda-src/fp.cuh",
    "../cuda-src/fp2.cuh",
    "../cuda-src/curve.cuh",
    "../cuda-src/fixed_base.cu",
    "tests/host_math/fixed_base_driver.cpp",
];

/// The fixed-base kernel's affine products of `ks` over `table` (G1: curve 1, G2: curve 2).
fn host_fixed_base(exe: &Path, curve: u32, table: &[u8], ks: &[Scalar]) -> Vec<u8> {
    let canon: Vec<[u8; 32]> = ks.iter().map(|k| k.to_bytes_le()).collect();
    let req = [
        le_words(&[curve]),
        (ks.len() as u64).to_le_bytes().to_vec(),
        table.to_vec(),
        as_bytes(&canon).to_vec(),
    ]
    .concat();
    exchange(exe, &req, "host fixed-base multiplication failed")
}

/// Scalars for the fixed-base checks: random ones, then 0, 1, −1, single bytes at the window
/// edges, 256^j, and r − 256 (every byte but the lowest at its top value).
fn fixed_base_scalars(rng: &mut ChaCha20Rng, random: usize) -> Vec<Scalar> {
    let mut ks: Vec<Scalar> = (0..random).map(|_| Scalar::random(&mut *rng)).collect();
    ks.extend([
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(255u64),
        Scalar::from(256u64),
        Scalar::from(1u64 << 63),
        Scalar::from(2u64).pow_vartime([248u64]),
        -Scalar::from(256u64),
    ]);
    ks
}

#[test]
fn fixed_base_matches_blstrs_on_the_host() {
    use cuzk_engine::fixed_base::FixedBase;
    let Some(exe) = program(FIXED_BASE, "") else {
        return;
    };
    let mut rng = rng();
    let g1 = G1Projective::random(&mut rng);
    let t1 = FixedBase::new(g1);
    let ks = fixed_base_scalars(&mut rng, 200);
    let raw = host_fixed_base(&exe, 1, as_bytes(t1.table()), &ks);
    assert_eq!(raw.len(), ks.len() * 96);
    let mut got = vec![G1Affine::identity(); ks.len()];
    as_bytes_mut(&mut got).copy_from_slice(&raw);
    for (i, k) in ks.iter().enumerate() {
        assert_eq!(
            got[i],
            (g1 * k).to_affine(),
            "G1 fixed-base product {i} ({k:?})"
        );
    }
    let g2 = G2Projective::random(&mut rng);
    let t2 = FixedBase::new(g2);
    let ks = fixed_base_scalars(&mut rng, 40);
    let raw = host_fixed_base(&exe, 2, as_bytes(t2.table()), &ks);
    let mut got = vec![G2Affine::identity(); ks.len()];
    as_bytes_mut(&mut got).copy_from_slice(&raw);
    for (i, k) in ks.iter().enumerate() {
        assert_eq!(
            got[i],
            (g2 * k).to_affine(),
            "G2 fixed-base product {i} ({k:?})"
        );
    }
}
