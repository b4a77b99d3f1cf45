// Lazy-reduction Fp2 product (a tuning switch, -DCUZK_FP2_LAZY=1): the three Karatsuba products
// are taken as 768-bit integers and only the two results are reduced (3 products + 2
// reductions instead of 3 × (product + reduction)). Checked on the host against blstrs by
// engine/tests/cuda_math_on_host.rs.
#ifndef CUZK_FP2_LAZY
#define CUZK_FP2_LAZY 0
#endif

namespace wide {
constexpr int N = Fp::N;
// p^2, 24 little-endian limbs: added to a0*b0 - a1*b1 so that it cannot go negative.
__device__ constexpr u32 P2[2 * N] = {0x1c718e39u, 0x26aa0000u, 0x76382eabu, 0x7ced6b1du, 0x62113cfdu, 0x162c3383u,
                                     0x3e71b743u, 0x66bf91edu, 0x7091a049u, 0x292e85a8u, 0x86185c7bu, 0x1d68619cu,
                                     0x0978ef01u, 0xf5314933u, 0x16ddca6eu, 0x50a62cfdu, 0x349e8bd0u, 0x66e59e49u,
                                     0x0e7046b4u, 0xe2dc90e5u, 0xa22f25e9u, 0x4bd278eau, 0xb8c35fc7u, 0x02a437a4u};

// a + b without reduction (a, b < p, so the sum < 2p < 2^384 fits in N limbs).
__device__ __forceinline__ void add_raw(u32* r, const u32* a, const u32* b) {
    r[0] = add_cc(a[0], b[0]);
    _Pragma("unroll") for (int k = 1; k < N; k++) r[k] = addc_cc(a[k], b[k]);
}

// The lazy product's two outputs: c0 = a0 b0 - a1 b1, c1 = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1.
__device__ __noinline__ void fp2_mul(Fp& c0, Fp& c1, const Fp& a0, const Fp& a1, const Fp& b0, const Fp& b1) {
    u32 t0[2 * N], t1[2 * N], d[2 * N];
    Fp::mul_wide(t0, a0.v, b0.v);
    Fp::mul_wide(t1, a1.v, b1.v);
    // d = t0 + p^2 - t1, in [0, 2 p^2).
    d[0] = add_cc(t0[0], P2[0]);
    _Pragma("unroll") for (int k = 1; k < 2 * N; k++) d[k] = addc_cc(t0[k], P2[k]);
    d[0] = sub_cc(d[0], t1[0]);
    _Pragma("unroll") for (int k = 1; k < 2 * N; k++) d[k] = subc_cc(d[k], t1[k]);
    c0 = Fp::redc_wide(d);
    // s = t0 + t1 (below 2 p^2 < 2^768).
    d[0] = add_cc(t0[0], t1[0]);
    _Pragma("unroll") for (int k = 1; k < 2 * N; k++) d[k] = addc_cc(t0[k], t1[k]);
    u32 sa[N], sb[N];
    add_raw(sa, a0.v, a1.v);
    add_raw(sb, b0.v, b1.v);
    Fp::mul_wide(t0, sa, sb);
    // c1 = (a0 + a1)(b0 + b1) - (t0 + t1) = a0 b1 + a1 b0, in [0, 2 p^2).
    t0[0] = sub_cc(t0[0], d[0]);
    _Pragma("unroll") for (int k = 1; k < 2 * N; k++) t0[k] = subc_cc(t0[k], d[k]);
    c1 = Fp::redc_wide(t0);
}
}  // namespace wide

// Fp2 = Fp[u]/(u^2 + 1), laid out as blst's blst_fp2: c0 then c1.
struct Fp2 {
    Fp c0, c1;
    static constexpr int WORDS = 2 * Fp::N;

    static __device__ __forceinline__ Fp2 zero() { Fp2 r; r.c0 = Fp::zero(); r.c1 = Fp::zero(); return r; }
    static __device__ __forceinline__ Fp2 one() { Fp2 r; r.c0 = Fp::one(); r.c1 = Fp::zero(); return r; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ Fp2 operator+(const Fp2& b) const { Fp2 r; r.c0 = c0 + b.c0; r.c1 = c1 + b.c1; return r; }
    __device__ __forceinline__ Fp2 operator-(const Fp2& b) const { Fp2 r; r.c0 = c0 - b.c0; r.c1 = c1 - b.c1; return r; }
    __device__ __forceinline__ Fp2 neg() const { Fp2 r; r.c0 = c0.neg(); r.c1 = c1.neg(); return r; }
    __device__ __forceinline__ Fp2 dbl() const { return *this + *this; }

    // Karatsuba: three Fp products, each a call (the G2 kernels are large enough that inline Fp
    // products cost more in instruction fetch than the calls do: 8% on a 2^24 G2 MSM on an H200).
    __device__ __noinline__ Fp2 operator*(const Fp2& b) const {
        Fp2 r;
#if CUZK_FP2_LAZY
        wide::fp2_mul(r.c0, r.c1, c0, c1, b.c0, b.c1);
#else
        Fp t0 = c0.mul_call(b.c0);
        Fp t1 = c1.mul_call(b.c1);
        Fp t2 = (c0 + c1).mul_call(b.c0 + b.c1);
        r.c0 = t0 - t1;
        r.c1 = t2 - t0 - t1;
#endif
        return r;
    }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two Fp products.
    __device__ __noinline__ Fp2 sqr() const {
        Fp2 r; r.c0 = (c0 + c1).mul_call(c0 - c1); Fp t = c0.mul_call(c1); r.c1 = t + t; return r;
    }
    static __device__ __forceinline__ Fp2 load(const u32* p) { Fp2 r; r.c0 = Fp::load(p); r.c1 = Fp::load(p + Fp::N); return r; }
    __device__ __forceinline__ void store(u32* p) const { c0.store(p); c1.store(p + Fp::N); }
};
