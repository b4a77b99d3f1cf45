// Fixed-base multiplication for the setup (engine/src/gpu/fixed_base.rs): out[i] = k_i · g by
// byte windows over the table T[j·256 + d] = d · 256^j · g (32 windows of 256 affine points;
// entry 0 of each window is unused), so a scalar costs at most 32 mixed additions. The scalars
// are canonical (not Montgomery), little-endian, 8 words each; the results are XYZZ. The
// host-side engine/src/fixed_base.rs computes the same sums on the CPU.

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
    acc.store(out + (u64)Xyzz<F>::WORDS * i);
}

extern "C" __global__ void __launch_bounds__(128) fixed_base_g1(const u32* table, const u32* scalars, u32* out, u64 n) {
    fixed_base<Fp, true>(table, scalars, out, n);
}
extern "C" __global__ void __launch_bounds__(128) fixed_base_g2(const u32* table, const u32* scalars, u32* out, u64 n) {
    fixed_base<Fp2, false>(table, scalars, out, n);
}
