// Fixed-base multiplication for the setup (engine/src/gpu/fixed_base.rs): out[i] = k_i · g by
// byte windows over the table T[j·256 + d] = d · 256^j · g (32 windows of 256 affine points;
// entry 0 of each window is unused), so a scalar costs at most 32 mixed additions, then made
// affine here (one Fermat inversion a point), so the host only copies. The scalars are canonical
// (not Montgomery), little-endian, 8 words each; the results are blst affine points (all zeros
// = the identity). The host-side engine/src/fixed_base.rs computes the same points on the CPU.

// 1/a = a^(p−2) in Fp (0 for 0), left to right over the bits of p − 2.
__device__ __noinline__ Fp fp_inv(const Fp a) {
    u32 e[Fp::N];
#pragma unroll
    for (int i = 0; i < Fp::N; i++) e[i] = FpParams::M[i];
    e[0] -= 2;  // p is odd and its lowest word is above 2: no borrow
    Fp r = Fp::one();
    for (int w = Fp::N - 1; w >= 0; w--) {
        for (int b = 31; b >= 0; b--) {
            r = r.sqr();
            if ((e[w] >> b) & 1) r = r * a;
        }
    }
    return r;
}

__device__ __forceinline__ Fp inv_of(const Fp& a) { return fp_inv(a); }
// 1/(c0 + c1·u) = (c0 − c1·u) / (c0² + c1²), as u² = −1.
__device__ __forceinline__ Fp2 inv_of(const Fp2& a) {
    Fp t = fp_inv(a.c0 * a.c0 + a.c1 * a.c1);
    Fp2 r;
    r.c0 = a.c0 * t;
    r.c1 = (a.c1 * t).neg();
    return r;
}

// x = X/ZZ, y = Y/ZZZ from one inversion t = 1/(ZZ·ZZZ): 1/ZZ = ZZZ·t, 1/ZZZ = ZZ·t.
template <class F>
__device__ __forceinline__ void store_affine(const Xyzz<F>& p, u32* out) {
    if (p.is_inf()) {
        F::zero().store(out);
        F::zero().store(out + F::WORDS);
        return;
    }
    F t = inv_of(p.zz * p.zzz);
    F x = p.x * (p.zzz * t);
    F y = p.y * (p.zz * t);
    x.store(out);
    y.store(out + F::WORDS);
}

template <class F, bool INLINE>
__device__ __forceinline__ void fixed_base(const u32* table, const u32* scalars, u32* out, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // the grid is rounded up to whole blocks
    Xyzz<F> acc = Xyzz<F>::inf();
    for (u32 w = 0; w < 8; w++) {
        u32 word = scalars[i * 8 + w];
        for (u32 b = 0; b < 4; b++) {
            u32 d = (word >> (8 * b)) & 0xff;
            if (d == 0) continue;
            Affine<F> p = Affine<F>::load(table + (u64)Affine<F>::WORDS * ((w * 4 + b) * 256 + d));
            acc = INLINE ? acc.add_affine_inline(p) : acc.add_affine(p);
        }
    }
    store_affine(acc, out + (u64)Affine<F>::WORDS * i);
}

extern "C" __global__ void __launch_bounds__(128) fixed_base_g1(const u32* table, const u32* scalars, u32* out, u64 n) {
    fixed_base<Fp, true>(table, scalars, out, n);
}
extern "C" __global__ void __launch_bounds__(128) fixed_base_g2(const u32* table, const u32* scalars, u32* out, u64 n) {
    fixed_base<Fp2, false>(table, scalars, out, n);
}
