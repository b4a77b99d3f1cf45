// Batch addition (the sum of the bases selected by a bitmap, i.e. the scalars equal to one) and
// the generic fold of XYZZ partial sums (engine/src/gpu/fold.rs).

// Thread t sums the set bits of bitmap words [t*wpt, (t+1)*wpt), skipping unset bits entirely so
// all lanes of a warp do useful additions. Bits at or beyond n are ignored.
template <class F, bool INLINE>
__device__ __forceinline__ void batch_add(const u32* bases, const u64* bits, u32* partials, u64 n, u64 wpt) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 nwords = (n + 63) / 64;
    u64 w0 = t * wpt;
    if (w0 >= nwords) return;  // the grid is rounded up to whole blocks
    Xyzz<F> acc = Xyzz<F>::inf();
    for (u64 w = w0; w < w0 + wpt && w < nwords; w++) {
        u64 word = bits[w];
        if (w == nwords - 1 && (n & 63) != 0) word &= (1ull << (n & 63)) - 1;
        while (word != 0) {
            u32 bit = __ffsll((long long)word) - 1;
            word &= word - 1;
            Affine<F> p = Affine<F>::load(bases + (u64)Affine<F>::WORDS * (w * 64 + bit));
            acc = INLINE ? acc.add_affine_inline(p) : acc.add_affine(p);
        }
    }
    acc.store(partials + (u64)Xyzz<F>::WORDS * t);
}

// out[j] = sum of in[j*k .. min((j+1)*k, count)).
template <class F>
__device__ __forceinline__ void reduce_sum(const u32* in, u32* out, u64 count, u32 k) {
    u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 lo = j * k;
    if (lo >= count) return;
    u64 hi = min(lo + k, count);
    Xyzz<F> acc = Xyzz<F>::load(in + (u64)Xyzz<F>::WORDS * lo);
    for (u64 i = lo + 1; i < hi; i++) acc = acc.add(Xyzz<F>::load(in + (u64)Xyzz<F>::WORDS * i));
    acc.store(out + (u64)Xyzz<F>::WORDS * j);
}

// Minimum resident 128-thread blocks per SM for the G1 point kernels (caps their registers).
#ifndef CUZK_G1_MIN_BLOCKS
#define CUZK_G1_MIN_BLOCKS 4
#endif

extern "C" __global__ void __launch_bounds__(128, CUZK_G1_MIN_BLOCKS) batch_add_g1(const u32* bases, const u64* bits, u32* partials, u64 n, u64 wpt) {
    batch_add<Fp, true>(bases, bits, partials, n, wpt);
}
extern "C" __global__ void __launch_bounds__(128) batch_add_g2(const u32* bases, const u64* bits, u32* partials, u64 n, u64 wpt) {
    batch_add<Fp2, false>(bases, bits, partials, n, wpt);
}
extern "C" __global__ void __launch_bounds__(128) reduce_sum_g1(const u32* in, u32* out, u64 count, u32 k) {
    reduce_sum<Fp>(in, out, count, k);
}
extern "C" __global__ void __launch_bounds__(128) reduce_sum_g2(const u32* in, u32* out, u64 count, u32 k) {
    reduce_sum<Fp2>(in, out, count, k);
}
