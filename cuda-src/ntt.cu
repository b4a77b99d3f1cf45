// Radix-2 NTT over Fr, several stages per launch in shared memory.
//
// A pass handles the bit positions [b, b+t) of the element index: a block loads the 2^t * L
// elements that share every other index bit (L consecutive low indices at a time, so global
// accesses come in runs of L elements), runs t butterfly stages in shared memory, writes back.
// DIF (natural in, bit-reversed out) runs passes from the top bits down; DIT (bit-reversed in,
// natural out) runs them bottom up. Twiddles come from a table tw[j] = w^j, j < n/2, of the
// domain's primitive n-th root w; the inverse transform uses w^-e = -w^(n/2 - e).

__device__ __forceinline__ Fr load_global(const u32* p) {
    const uint4* q = (const uint4*)p;
    uint4 x = q[0], y = q[1];
    Fr r;
    r.v[0] = x.x; r.v[1] = x.y; r.v[2] = x.z; r.v[3] = x.w;
    r.v[4] = y.x; r.v[5] = y.y; r.v[6] = y.z; r.v[7] = y.w;
    return r;
}

// Shared memory holds the block's elements as 8 rows of E words (word k of element e at
// sm[k*E + e]), so consecutive elements fall in consecutive banks.
__device__ __forceinline__ Fr sm_load(const u32* sm, u32 E, u32 e) {
    Fr r; _Pragma("unroll") for (int k = 0; k < 8; k++) r.v[k] = sm[k * E + e]; return r;
}
__device__ __forceinline__ void sm_store(u32* sm, u32 E, u32 e, const Fr& x) {
    _Pragma("unroll") for (int k = 0; k < 8; k++) sm[k * E + e] = x.v[k];
}

// Per-pass constants: the block's place in the index space and the transform's direction.
struct Pass {
    u32 logn, b, lgL, lg, half_n, dif, inverse;
    const u32* tw;

    // The twiddle of the butterfly whose first element has local index m0 at stage q.
    __device__ __forceinline__ Fr twiddle(u32 m0, u32 q) const {
        const u32 L = 1u << lgL;
        const u32 lo = m0 & (L - 1);
        const u32 mm = m0 >> lgL;
        const u32 j = ((mm & ((1u << q) - 1)) << b) | ((lg << lgL) | lo);
        const u32 ex = j << (logn - b - q - 1);
        if (ex == 0) return Fr::one();
        if (inverse) return load_global(tw + 8ull * (half_n - ex)).neg();
        return load_global(tw + 8ull * ex);
    }

    // One radix-2 butterfly on (x, y) = elements (m0, m0 + 2^q) in local element units << lgL.
    __device__ __forceinline__ void bfly(Fr& x, Fr& y, u32 e0, u32 q) const {
        Fr w = twiddle(e0, q);
        if (dif) {
            Fr s = x + y;
            y = (x - y) * w;
            x = s;
        } else {
            Fr yw = y * w;
            y = x - yw;
            x = x + yw;
        }
    }
};

// Local element index of the group member k (0..3 for radix 4, 0..1 for radix 2) of group r:
// bits [lowbit, lowbit + width) of the stage index are inserted as k.
__device__ __forceinline__ u32 member(u32 r, u32 lowbit, u32 width, u32 k) {
    const u32 m = ((r >> lowbit) << (lowbit + width)) | (r & ((1u << lowbit) - 1));
    return m | (k << lowbit);
}

// Minimum resident 256-thread blocks per SM for ntt_pass (caps its registers).
#ifndef CUZK_NTT_MIN_BLOCKS
#define CUZK_NTT_MIN_BLOCKS 3
#endif

extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_MIN_BLOCKS) ntt_pass(u32* data, const u32* tw, u32 logn, u32 b, u32 t,
                                                           u32 lgL, u32 dif, u32 inverse) {
    extern __shared__ u32 sm[];
    const u32 L = 1u << lgL;
    const u32 E = (1u << t) << lgL;  // elements in this block
    const u32 lo_groups = (1u << b) >> lgL;
    const u64 blk = blockIdx.x;
    const u64 hi = blk / lo_groups;
    const u32 lg = (u32)(blk % lo_groups);
    const u64 base = (hi << (b + t)) | ((u64)lg << lgL);
    const u32 tid = threadIdx.x;
    Pass P;
    P.logn = logn; P.b = b; P.lgL = lgL; P.lg = lg; P.half_n = (1u << logn) >> 1;
    P.dif = dif; P.inverse = inverse; P.tw = tw;

    // Global <-> shared in 16-byte pieces: piece c is half (c & 1) of element c >> 1.
    for (u32 c = tid; c < 2 * E; c += blockDim.x) {
        const u32 e = c >> 1, h = c & 1;
        const u64 g = base + ((u64)(e >> lgL) << b) + (e & (L - 1));
        uint4 x = ((const uint4*)(data + 8 * g))[h];
        sm[(4 * h + 0) * E + e] = x.x;
        sm[(4 * h + 1) * E + e] = x.y;
        sm[(4 * h + 2) * E + e] = x.z;
        sm[(4 * h + 3) * E + e] = x.w;
    }
    __syncthreads();

    // Stages two at a time (radix 4: four elements in registers, one barrier per two stages);
    // an odd stage left over runs as radix 2. DIF runs stage bits top down, DIT bottom up.
    u32 done = 0;
    while (done < t) {
        const u32 width = (t - done >= 2) ? 2 : 1;
        const u32 lowbit = dif ? (t - done - width) : done;  // lowest stage bit of this step
        const u32 groups = (E >> width);
        for (u32 u = tid; u < groups; u += blockDim.x) {
            const u32 lo = u & (L - 1);
            const u32 r = u >> lgL;
            if (width == 2) {
                Fr x[4];
                u32 e[4];
                _Pragma("unroll") for (int k = 0; k < 4; k++) {
                    e[k] = (member(r, lowbit, 2, k) << lgL) | lo;
                    x[k] = sm_load(sm, E, e[k]);
                }
                if (dif) {
                    P.bfly(x[0], x[2], e[0], lowbit + 1);
                    P.bfly(x[1], x[3], e[1], lowbit + 1);
                    P.bfly(x[0], x[1], e[0], lowbit);
                    P.bfly(x[2], x[3], e[2], lowbit);
                } else {
                    P.bfly(x[0], x[1], e[0], lowbit);
                    P.bfly(x[2], x[3], e[2], lowbit);
                    P.bfly(x[0], x[2], e[0], lowbit + 1);
                    P.bfly(x[1], x[3], e[1], lowbit + 1);
                }
                _Pragma("unroll") for (int k = 0; k < 4; k++) sm_store(sm, E, e[k], x[k]);
            } else {
                const u32 e0 = (member(r, lowbit, 1, 0) << lgL) | lo;
                const u32 e1 = (member(r, lowbit, 1, 1) << lgL) | lo;
                Fr x = sm_load(sm, E, e0), y = sm_load(sm, E, e1);
                P.bfly(x, y, e0, lowbit);
                sm_store(sm, E, e0, x);
                sm_store(sm, E, e1, y);
            }
        }
        __syncthreads();
        done += width;
    }

    for (u32 c = tid; c < 2 * E; c += blockDim.x) {
        const u32 e = c >> 1, h = c & 1;
        const u64 g = base + ((u64)(e >> lgL) << b) + (e & (L - 1));
        uint4 x;
        x.x = sm[(4 * h + 0) * E + e];
        x.y = sm[(4 * h + 1) * E + e];
        x.z = sm[(4 * h + 2) * E + e];
        x.w = sm[(4 * h + 3) * E + e];
        ((uint4*)(data + 8 * g))[h] = x;
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
