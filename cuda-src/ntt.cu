// Radix-2 NTT over Fr, several stages per launch in shared memory.
//
// A pass handles the bit positions [b, b+t) of the element index: a block loads the 2^t * L
// elements that share every other index bit (L consecutive low indices at a time, so global
// accesses come in runs of L elements), runs t butterfly stages in shared memory, writes back.
// DIF (natural in, bit-reversed out) runs passes from the top bits down; DIT (bit-reversed in,
// natural out) runs them bottom up. Twiddles come from a table tw[j] = w^j, j < n/2, of the
// domain's primitive n-th root w; the inverse transform uses w^-e = -w^(n/2 - e).

__device__ __forceinline__ Fr twiddle(const u32* tw, u32 e, u32 half_n, u32 inverse) {
    if (e == 0) return Fr::one();
    if (inverse) return Fr::load(tw + 8ull * (half_n - e)).neg();
    return Fr::load(tw + 8ull * e);
}

extern "C" __global__ void ntt_pass(u32* data, const u32* tw, u32 logn, u32 b, u32 t, u32 lgL,
                                    u32 dif, u32 inverse) {
    extern __shared__ u32 sm[];
    const u32 L = 1u << lgL;
    const u32 E = (1u << t) << lgL;  // elements in this block
    const u32 half = E >> 1;
    const u32 lo_groups = (1u << b) >> lgL;
    const u64 blk = blockIdx.x;
    const u64 hi = blk / lo_groups;
    const u32 lg = (u32)(blk % lo_groups);
    const u64 base = (hi << (b + t)) | ((u64)lg << lgL);
    const u32 tid = threadIdx.x;
    const u32 half_n = (1u << logn) >> 1;

    for (u32 e = tid; e < E; e += blockDim.x) {
        u64 g = base + ((u64)(e >> lgL) << b) + (e & (L - 1));
        const u32* src = data + 8 * g;
        _Pragma("unroll") for (int k = 0; k < 8; k++) sm[8 * e + k] = src[k];
    }
    __syncthreads();

    for (u32 s = 0; s < t; s++) {
        const u32 q = dif ? (t - 1 - s) : s;
        for (u32 u = tid; u < half; u += blockDim.x) {
            const u32 lo = u & (L - 1);
            const u32 r = u >> lgL;
            const u32 qmask = (1u << q) - 1;
            const u32 m0 = ((r >> q) << (q + 1)) | (r & qmask);
            const u32 m1 = m0 | (1u << q);
            const u32 e0 = (m0 << lgL) | lo;
            const u32 e1 = (m1 << lgL) | lo;
            const u32 j = ((m0 & qmask) << b) | ((lg << lgL) | lo);
            const u32 ex = j << (logn - b - q - 1);
            Fr w = twiddle(tw, ex, half_n, inverse);
            Fr x = Fr::load(sm + 8 * e0);
            Fr y = Fr::load(sm + 8 * e1);
            if (dif) {
                Fr sum = x + y;
                Fr dif_ = (x - y) * w;
                sum.store(sm + 8 * e0);
                dif_.store(sm + 8 * e1);
            } else {
                Fr yw = y * w;
                (x + yw).store(sm + 8 * e0);
                (x - yw).store(sm + 8 * e1);
            }
        }
        __syncthreads();
    }

    for (u32 e = tid; e < E; e += blockDim.x) {
        u64 g = base + ((u64)(e >> lgL) << b) + (e & (L - 1));
        u32* dst = data + 8 * g;
        _Pragma("unroll") for (int k = 0; k < 8; k++) dst[k] = sm[8 * e + k];
    }
}

// tw[j] = w^j for j < count, from pows[k] = w^(2^k).
extern "C" __global__ void ntt_twiddles(u32* tw, const u32* pows, u64 count) {
    u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    Fr acc = Fr::one();
    for (u32 k = 0; k < 40 && (j >> k) != 0; k++) {
        if ((j >> k) & 1) acc = acc * Fr::load(pows + 8 * k);
    }
    acc.store(tw + 8 * j);
}
