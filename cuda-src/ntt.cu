// Radix-2 NTT over Fr, several stages per launch in shared memory.
//
// A pass handles the bit positions [b, b+t) of the element index: a block loads the 2^t * L
// elements that share every other index bit (L consecutive low indices at a time, so global
// accesses come in runs of L elements), runs t butterfly stages in shared memory, writes back.
// DIF (natural in, bit-reversed out) runs passes from the top bits down; DIT (bit-reversed in,
// natural out) runs them bottom up. Twiddles come from a table tw[j] = w^j, j < n/2, of the
// domain's primitive n-th root w; the inverse transform uses w^-e = -w^(n/2 - e).

// Natural-order output (ntt.rs `natural_launches`): the last DIF pass (b = 0) may write element g
// to out[bitrev(g)] instead of back in place. Its blocks then take their high index bits in
// bit-reversed order of blockIdx, so that the blocks resident together write neighbouring
// elements of `out` (whole cache lines in L2) rather than elements 2^(logn - t) apart.
__device__ __forceinline__ u64 ntt_block(const u32* out) {
    if (out == nullptr) return blockIdx.x;
    return bitrev(blockIdx.x, 31 - __clz(gridDim.x));  // gridDim.x is a power of two
}
__device__ __forceinline__ u32* ntt_dst(u32* data, u32* out, u64 g, u32 logn) {
    return out == nullptr ? data + 8 * g : out + 8 * bitrev(g, logn);
}

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

extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_MIN_BLOCKS) ntt_pass(u32* data, u32* out, const u32* tw, u32 logn, u32 b, u32 t,
                                                           u32 lgL, u32 dif, u32 inverse) {
    extern __shared__ u32 sm[];
    const u32 L = 1u << lgL;
    const u32 E = (1u << t) << lgL;  // elements in this block
    const u32 lo_groups = (1u << b) >> lgL;
    const u64 blk = ntt_block(out);
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
        ((uint4*)ntt_dst(data, out, g, logn))[h] = x;
    }
}

// ---- ntt_pass_v2 ----------------------------------------------------------------------------
// The same passes (bit ranges [b, b + t), in the same order), butterflies and twiddles as
// ntt_pass, hence the same bits, organised for throughput:
//  * every twiddle of the block is loaded into shared memory once, issued right after the data
//    loads: stage q uses w^(((m << b) | low) << (logn - b - q - 1)) for the 2^q values m of the
//    stage bits below q and the block's L low indices low = (lg << lgL) | lo; slot
//    ((2^q - 1 + m) << lgL) | lo holds it, the inverse's negation already applied;
//  * blocks of 2^10 elements where the transform allows (from 2^16 on): 2^t stage positions
//    times 2^lgS independent groups of the higher bits (which share their twiddles) times
//    2^lgL consecutive low indices (what is still missing, e.g. in the top pass; up to
//    10 - t, not limited to 1 as in ntt_pass) — the host picks the shape (ntt.rs, v2_shape);
//  * stages run three at a time (radix 8: eight elements in registers, twelve butterflies per
//    shared-memory round trip and barrier; radix 4 for a last round of two stages) in those
//    blocks of 2^10 elements and 128 threads (t = 9 or 8), block size a compile-time constant;
//    other passes (small transforms) run the same code at run time, radix 4;
//  * the transform's stage 0 (the last DIF / first DIT stage; twiddles all one) multiplies
//    nothing (a block-uniform branch);
//  * shared-memory accesses are free of bank conflicts: element columns are padded by a word
//    per 32 and each lane takes the group whose varying element bits fall in 32 banks.
// engine/src/gpu/ntt.rs has a host model of this kernel's index, twiddle and bank mapping; its
// unit tests run the model against a plain radix-2 transform.

// Four blocks of 128 threads an SM: 128 registers (8 bytes of spills), with blocks of 50 KiB of
// shared memory (see v2_shape in ntt.rs): −7 % at 2^27 on an H200 against three blocks.
#ifndef CUZK_NTT2_MIN_BLOCKS
#define CUZK_NTT2_MIN_BLOCKS 4
#endif
#define NTT2_MAX_THREADS 128

// Shared memory, in words. Data: word r of local element e at ntt2_row(r, RS) + ntt2_col(e),
// RS = E + E/32, 8 RS + 16 words in all; rows 4..7 start 16 words later, so that the two 16-byte
// halves of 16 consecutive elements (one warp's global access) fall in 32 different banks.
// Twiddles follow: word r of slot s at r * TWS + s; TWS is 512 or 1024 in the radix-8 blocks
// (the smaller that holds the (2^t - 1) << lgL slots; a constant), the slot count otherwise.
__device__ __forceinline__ u32 ntt2_col(u32 e) { return e + (e >> 5); }
__device__ __forceinline__ u32 ntt2_row(u32 r, u32 RS) { return r * RS + (r >= 4 ? 16u : 0u); }

// The element whose column starts at q: pointer plus constant row offsets, which ptxas folds
// into the shared-memory instructions (u32 index arithmetic would stop it: it might wrap).
__device__ __forceinline__ Fr ntt2_ld(const u32* q, u32 RS) {
    Fr x;
    _Pragma("unroll") for (int r = 0; r < 8; r++) x.v[r] = q[ntt2_row(r, RS)];
    return x;
}
__device__ __forceinline__ void ntt2_st(u32* q, u32 RS, const Fr& x) {
    _Pragma("unroll") for (int r = 0; r < 8; r++) q[ntt2_row(r, RS)] = x.v[r];
}

// The local element (window bits zero) of group u in a round over the element bits [p, p + w)
// of nb: u's five low bits go, for i = 0..4, to element bit i, or to bit i + 5 where bit i is in
// the window or beyond nb (either moves the column by 2^i mod 32), so a warp's 32 lanes hit 32
// banks; u's other bits fill the remaining free bits upward.
__device__ __forceinline__ u32 ntt2_scatter(u32 u, u32 p, u32 w, u32 nb) {
    const u32 win = ((1u << w) - 1) << p;
    u32 e = 0, used = win, ub = 0;
    _Pragma("unroll") for (u32 i = 0; i < 5; i++) {
        const u32 c = (i < nb && !((win >> i) & 1)) ? i : i + 5;
        if (c < nb) {
            e |= ((u >> ub) & 1) << c;
            used |= 1u << c;
            ub++;
        }
    }
    _Pragma("unroll") for (u32 c = 0; c < 10; c++) {
        if (c < nb && !((used >> c) & 1)) {
            e |= ((u >> ub) & 1) << c;
            ub++;
        }
    }
    return e;
}

// Twiddle slot of the butterfly whose first element is e, at stage q.
__device__ __forceinline__ u32 ntt2_slot(u32 e, u32 q, u32 lgL) {
    return (e & ((1u << (q + lgL)) - 1)) + (((1u << q) - 1) << lgL);
}

// A group of 2^W elements, element k = e0 | k << p, over the local stage bits lowbit + j (j < W):
// load; W stages (DIF: j from W - 1 down, DIT: j up from 0), each on the pairs (k, k + 2^j) with
// the twiddle of element e0 | (k mod 2^j) << p at stage lowbit + j; store. `one0`: stage j = 0
// is the transform's stage 0, whose twiddles are all one.
template <bool DIF, int W>
__device__ __forceinline__ void ntt2_group(u32* sm, u32 RS, const u32* tsm, u32 TWS, u32 e0, u32 p, u32 lowbit, u32 lgL, bool one0) {
    Fr x[1 << W];
    u32* const q0 = sm + ntt2_col(e0);
    _Pragma("unroll") for (int k = 0; k < (1 << W); k++) x[k] = ntt2_ld(q0 + ntt2_col((u32)k << p), RS);
    _Pragma("unroll") for (int jj = 0; jj < W; jj++) {
        const int j = DIF ? W - 1 - jj : jj;
        const int h = 1 << j;
        const bool one = j == 0 && one0;
        _Pragma("unroll") for (int k = 0; k < (1 << W); k++) {
            if (k & h) continue;
            if (one) {
                Fr s = x[k] + x[k + h];
                x[k + h] = x[k] - x[k + h];
                x[k] = s;
                continue;
            }
            const u32* const tq = tsm + ntt2_slot(e0 | ((u32)(k & (h - 1)) << p), lowbit + j, lgL);
            Fr w;
            _Pragma("unroll") for (int r = 0; r < 8; r++) w.v[r] = tq[r * TWS];
            if (DIF) {
                Fr s = x[k] + x[k + h];
                x[k + h] = (x[k] - x[k + h]) * w;
                x[k] = s;
            } else {
                Fr yw = x[k + h] * w;
                x[k + h] = x[k] - yw;
                x[k] = x[k] + yw;
            }
        }
    }
    _Pragma("unroll") for (int k = 0; k < (1 << W); k++) ntt2_st(q0 + ntt2_col((u32)k << p), RS, x[k]);
}

// The rounds of a pass of t stages over E = 2^(t + lgL + lgS) elements, bd threads, one barrier
// each. RADIX8 (t = 9 or 8, bd = E/8): three rounds, radix 8 with one group a thread, except a
// last radix-4 round (two groups a thread) when t = 8. Otherwise radix 4 while two stages are
// left, then radix 2, groups in a loop over the threads. DIF runs the stage bits top down, DIT bottom
// up; rounds are counted by r alone, so that little lives across a round's products.
template <bool DIF, bool RADIX8>
__device__ __forceinline__ void ntt2_rounds(u32* sm, u32 RS, const u32* tsm, u32 TWS, u32 t, u32 lgL, u32 lgS, u32 b, u32 bd) {
    const u32 nb = t + lgL + lgS, E = 1u << nb;
    const u32 tid = threadIdx.x;
    const u32 MAXW = RADIX8 ? 3 : 2;
    const u32 rounds = RADIX8 ? 3 : (t + 1) / 2;
    _Pragma("unroll 1") for (u32 r = 0; r < rounds; r++) {
        const u32 w = (r + 1 < rounds) ? MAXW : t - MAXW * r;     // stages in this round
        const u32 lowbit = DIF ? (r + 1 < rounds ? t - MAXW * (r + 1) : 0) : MAXW * r;
        const u32 p = lowbit + lgL;                              // its lowest element bit
        const bool one0 = lowbit == 0 && b == 0;                 // holds the transform's stage 0
        if (RADIX8 && w == 3) {
            ntt2_group<DIF, RADIX8 ? 3 : 2>(sm, RS, tsm, TWS, ntt2_scatter(tid, p, 3, nb), p, lowbit, lgL, one0);
        } else if (RADIX8) {
            // t = 8, the last round: two radix-4 groups a thread, both located up front.
            const u32 e0 = ntt2_scatter(tid, p, 2, nb), e1 = ntt2_scatter(tid + bd, p, 2, nb);
            ntt2_group<DIF, 2>(sm, RS, tsm, TWS, e0, p, lowbit, lgL, one0);
            ntt2_group<DIF, 2>(sm, RS, tsm, TWS, e1, p, lowbit, lgL, one0);
        } else {
            _Pragma("unroll 1") for (u32 u = tid; u < (E >> w); u += bd) {
                const u32 e0 = ntt2_scatter(u, p, w, nb);
                if (w == 2) ntt2_group<DIF, 2>(sm, RS, tsm, TWS, e0, p, lowbit, lgL, one0);
                else ntt2_group<DIF, 1>(sm, RS, tsm, TWS, e0, p, lowbit, lgL, one0);
            }
        }
        __syncthreads();
    }
}

// One pass. Local element e of a block: bits [0, lgL) the low index lo, [lgL, lgL + t) the
// stage bits sp, above them the group st of higher bits; global element
// ((((hiS << lgS) | st) << t | sp) << b) | (lg << lgL) | lo for block (hiS, lg).
// NB > 0: blocks of E = 2^NB elements (t = 8 or 9) and E/8 threads, as constants; NB = 0:
// anything, at run time.
template <int NB, int TWS_FIXED>
__device__ __forceinline__ void ntt2_pass(u32* sm, u32* __restrict__ data, u32* __restrict__ out, const u32* __restrict__ tw, u32 logn, u32 b, u32 t,
                                          u32 lgL, u32 lgS, u32 dif, u32 inverse) {
    const u32 E = NB > 0 ? (1u << (NB > 0 ? NB : 0)) : ((1u << t) << lgL) << lgS;
    const u32 bd = NB > 0 ? E >> 3 : blockDim.x;
    const u32 RS = E + (E >> 5);
    const u32 tid = threadIdx.x;
    const u32 L = 1u << lgL;
    const u32 TWN = ((1u << t) - 1) << lgL;
    const u32 TWS = TWS_FIXED > 0 ? (u32)TWS_FIXED : TWN;  // a constant folds into the shared-memory offsets
    u32* const tsm = sm + 8 * RS + 16;
    const u32 lo_groups = (1u << b) >> lgL;
    const u64 blk = ntt_block(out);
    const u64 hiS = blk / lo_groups;
    const u32 lg = (u32)(blk % lo_groups);
    const u64 base = (hiS << (lgS + b + t)) | ((u64)lg << lgL);
    const u32 tmask = (1u << t) - 1, lgLt = lgL + t;
    const u32 half_n = (1u << logn) >> 1;

    // Data: 16-byte piece c is half (c & 1) of element c >> 1; eight loads in flight a thread.
    _Pragma("unroll 1") for (u32 c0 = 0; c0 < 2 * E; c0 += 8 * bd) {
        uint4 x[8];
        _Pragma("unroll") for (u32 i = 0; i < 8; i++) {
            const u32 c = c0 + i * bd + tid;
            if (c < 2 * E) {
                const u32 e = c >> 1;
                const u64 g = base + ((u64)(e >> lgLt) << (b + t)) + ((u64)((e >> lgL) & tmask) << b) + (e & (L - 1));
                x[i] = ((const uint4*)(data + 8 * g))[c & 1];
            }
        }
        _Pragma("unroll") for (u32 i = 0; i < 8; i++) {
            const u32 c = c0 + i * bd + tid;
            if (c < 2 * E) {
                u32* const q = sm + ntt2_col(c >> 1) + ((c & 1) ? ntt2_row(4, RS) : 0);
                q[0] = x[i].x;
                q[RS] = x[i].y;
                q[2 * RS] = x[i].z;
                q[3 * RS] = x[i].w;
            }
        }
    }

    // Twiddles (see the top): slot s -> stage q, stage bits m below q, low index; four slots
    // (eight loads) in flight a thread.
    _Pragma("unroll 1") for (u32 s0 = 0; s0 < TWN; s0 += 4 * bd) {
        Fr raw[4];
        u32 ex[4];
        _Pragma("unroll") for (u32 i = 0; i < 4; i++) {
            const u32 s = s0 + i * bd + tid;
            ex[i] = 0;
            if (s < TWN) {
                const u32 a = (s >> lgL) + 1;
                const u32 q = 31 - __clz(a);
                const u32 m = a - (1u << q);
                const u32 j = (m << b) | (lg << lgL) | (s & (L - 1));
                ex[i] = j << (logn - b - q - 1);
                if (ex[i] != 0) raw[i] = load_global(tw + 8ull * (inverse ? half_n - ex[i] : ex[i]));
            }
        }
        _Pragma("unroll") for (u32 i = 0; i < 4; i++) {
            const u32 s = s0 + i * bd + tid;
            if (s < TWN) {
                Fr v = Fr::one();
                if (ex[i] != 0) v = inverse ? raw[i].neg() : raw[i];
                u32* const q = tsm + s;
                _Pragma("unroll") for (int r = 0; r < 8; r++) q[r * TWS] = v.v[r];
            }
        }
    }
    __syncthreads();

    if (dif) ntt2_rounds<true, (NB > 0)>(sm, RS, tsm, TWS, t, lgL, lgS, b, bd);
    else ntt2_rounds<false, (NB > 0)>(sm, RS, tsm, TWS, t, lgL, lgS, b, bd);

    _Pragma("unroll 1") for (u32 c0 = 0; c0 < 2 * E; c0 += 8 * bd) {
        _Pragma("unroll") for (u32 i = 0; i < 8; i++) {
            const u32 c = c0 + i * bd + tid;
            if (c < 2 * E) {
                const u32 e = c >> 1, h = c & 1;
                const u32* const q = sm + ntt2_col(e) + (h ? ntt2_row(4, RS) : 0);
                uint4 x;
                x.x = q[0];
                x.y = q[RS];
                x.z = q[2 * RS];
                x.w = q[3 * RS];
                const u64 g = base + ((u64)(e >> lgLt) << (b + t)) + ((u64)((e >> lgL) & tmask) << b) + (e & (L - 1));
                ((uint4*)ntt_dst(data, out, g, logn))[h] = x;
            }
        }
    }
}

// Launch (engine/src/gpu/ntt.rs, `v2_shape`, `v2_threads`, `v2_smem_bytes`; `out` null except in
// a natural-order transform's last pass, see ntt_dst): blocks of
// E = 2^(t + lgL + lgS) elements, E/8 threads (1 to 128), 4 · (8 RS + 16 + 8 TWS) bytes of
// dynamic shared memory (RS = E + E/32; data and twiddle rows). The radix-8 path needs E = 2^10,
// t = 9 or 8 and 128 threads; any other pass runs at run time.
extern "C" __global__ void __launch_bounds__(NTT2_MAX_THREADS, CUZK_NTT2_MIN_BLOCKS)
ntt_pass_v2(u32* __restrict__ data, u32* __restrict__ out, const u32* __restrict__ tw, u32 logn, u32 b, u32 t, u32 lgL, u32 lgS, u32 dif, u32 inverse) {
    extern __shared__ u32 ntt2_sm[];
    if (t + lgL + lgS == 10 && (t == 9 || t == 8) && blockDim.x == 128) {
        if ((((1u << t) - 1) << lgL) <= 512)
            ntt2_pass<10, 512>(ntt2_sm, data, out, tw, logn, b, t, lgL, lgS, dif, inverse);
        else
            ntt2_pass<10, 1024>(ntt2_sm, data, out, tw, logn, b, t, lgL, lgS, dif, inverse);
    } else {
        ntt2_pass<0, 0>(ntt2_sm, data, out, tw, logn, b, t, lgL, lgS, dif, inverse);
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
