// Pippenger MSM over G1 and G2 with signed c-bit digits (c up to 24).
//
// 1. msm_histogram: each scalar leaves Montgomery form and is cut into nwin signed digits in
//    [-2^(c-1), 2^(c-1)]; a digit d != 0 counts towards bucket |d|-1 of its window. (This and
//    the scatter run once per group of windows whose counters fit in L2.)
// 2. msm_tile_sums, msm_scan (over the tile sums), msm_tile_scan: per window, exclusive prefix
//    sums of the bucket counts (bucket offsets), in coalesced tiles of up to 1024 buckets.
// 3. msm_scatter: the digits again, and a counting sort of point indices by (window, bucket);
//    the sign travels in bit 31 of the index. That writes each index to the next place of its
//    bucket's run, so each run's tail is a partly written 32-byte sector. Where a launch's
//    windows have more buckets than L2 holds such tails (wide windows, `MsmPlan::two_pass_sort`),
//    that wrote a sector of memory for each 4-byte index, so the sort runs in two passes
//    instead: msm_scatter_coarse puts each digit, with its bucket, at the next place of its
//    window's bin of buckets (MSM_SORT_BINS a window: a few hundred write streams, whose partial
//    sectors L2 gathers before they go to memory); msm_scatter_fine takes those records in
//    order and puts each index at its bucket's next place, so its writes at any time fall
//    within one or two bins' places, which L2 holds.
// 4. msm_accumulate_*: each window's sorted digits in equal shares over the window's threads
//    (`window_share`: the same number of mixed additions for every thread of a window, whatever
//    the bucket sizes or the zero digits; G1 in lockstep blocks, see `accumulate`): a bucket
//    that starts in a
//    thread's share is summed by that thread into the bucket sums; a bucket that began in an
//    earlier share leaves this thread's part of it as the thread's "head partial".
//    msm_fold_heads_*: the head partials of the threads a bucket spills into are summed in a
//    tree (log2 rounds); msm_fixup_*: the thread where the bucket starts adds that sum.
// 5. msm_bucket_reduce_*: per window, segment s of len = 2^k buckets starting at lo = s * len is
//    reduced with running sums to A_s = sum_{b in s} (b - lo + 1) S_b and Q_s = len * sum_{b in s} S_b
//    (k doublings), so that the window sum sum_b (b + 1) S_b = sum_s (A_s + s * Q_s).
// 6. msm_reduce_pairs_*: rounds that halve the terms of that sum: segments 2j and 2j + 1 become
//    A'_j = A_2j + A_2j+1 + Q_2j+1 and Q'_j = 2 (Q_2j + Q_2j+1), and sum_j (A'_j + j * Q'_j) is the
//    same sum; after the last round A_0 is the window sum. (Three additions and a doubling per
//    pair: no per-segment double-and-add by lo, and a short serial tail.) The host combines the
//    windows.

#define NO_DIGIT 0xffffffffu

// Minimum resident 128-thread blocks per SM for the G1 point kernels (caps their registers).
#ifndef CUZK_G1_MIN_BLOCKS
#define CUZK_G1_MIN_BLOCKS 4
#endif
// The same for the G2 accumulation: four blocks (16 warps, 128 registers, with spills). A warp's
// registers must fit one sub-partition's 16384, so 169 to 256 registers give 8 warps an SM, 129
// to 168 give 12. On an H200, MSM G2 2^24: 335.3 ms at four blocks, 350.1 at three, 369.6
// uncapped (two blocks, 197 registers).
#ifndef CUZK_G2_MIN_BLOCKS
#define CUZK_G2_MIN_BLOCKS 4
#endif
#define CUZK_G2_BOUNDS __launch_bounds__(128, CUZK_G2_MIN_BLOCKS)

// Walks a scalar's signed digits window by window (the carry of one window feeds the next).
struct Digits {
    Fr s;
    u32 c, carry;
    __device__ __forceinline__ Digits(const u32* scalar, u32 c_) : s(Fr::load(scalar).from_mont()), c(c_), carry(0) {}

    // Window w's digit as bucket | sign (bit 31), or NO_DIGIT for zero. Call for w = 0, 1, ...
    __device__ __forceinline__ u32 next(u32 w) {
        const u32 B = 1u << (c - 1);
        const u32 full = 1u << c;
        const u32 bit = w * c;
        const u32 limb = bit >> 5, sh = bit & 31;
        u64 chunk = 0;
        if (limb < 8) chunk = s.v[limb];
        if (limb + 1 < 8) chunk |= (u64)s.v[limb + 1] << 32;
        u32 d = (u32)((chunk >> sh) & (full - 1)) + carry;
        if (d > B) {
            carry = 1;
            d = full - d;  // negative digit, magnitude in [1, B)
            return d != 0 ? ((d - 1) | 0x80000000u) : NO_DIGIT;
        }
        carry = 0;
        return d != 0 ? d - 1 : NO_DIGIT;
    }
};

// The histogram and the scatter take the windows [w0, w1) of a launch (the digits of the lower
// windows are walked for their carries only): the host runs them in groups of windows whose
// counters fit in a few MiB of L2, so that their atomics hit the cache.
extern "C" __global__ void msm_histogram(const u32* scalars, u32* counts, u64 n, u32 c, u32 w0, u32 w1) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Digits dg(scalars + 8 * i, c);
    const u32 B = 1u << (c - 1);
    for (u32 w = 0; w < w1; w++) {
        u32 d = dg.next(w);
        if (w >= w0 && d != NO_DIGIT) atomicAdd(&counts[(u64)w * B + (d & 0x7fffffffu)], 1u);
    }
}

// Inclusive prefix sum over the block (blockDim.x a multiple of 32, at most 1024); `total` gets
// the block's sum.
__device__ __forceinline__ u32 block_inclusive_scan(u32 v, u32* total) {
    __shared__ u32 warp_sums[32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (u32 d = 1; d < 32; d <<= 1) {
        u32 o = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += o;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const u32 nw = blockDim.x >> 5;
        u32 s = lane < nw ? warp_sums[lane] : 0;
        for (u32 d = 1; d < 32; d <<= 1) {
            u32 o = __shfl_up_sync(0xffffffffu, s, d);
            if (lane >= d) s += o;
        }
        if (lane < nw) warp_sums[lane] = s;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    *total = warp_sums[(blockDim.x >> 5) - 1];
    return v;
}

// Block (tile, window): the sum of the window's counts in the tile of blockDim.x buckets.
extern "C" __global__ void msm_tile_sums(const u32* counts, u32* tile_sums, u32 B) {
    const u32 tiles = gridDim.x;
    const u64 w = blockIdx.y;
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    u32 v = b < B ? counts[w * B + b] : 0;
    u32 total;
    block_inclusive_scan(v, &total);
    if (threadIdx.x == 0) tile_sums[w * tiles + blockIdx.x] = total;
}

// One block per window; exclusive prefix sum of counts[w*B .. w*B+B) into offsets (and cursor,
// when not null). Used on the tile sums, whose count per window is at most 1024 here.
extern "C" __global__ void msm_scan(const u32* counts, u32* offsets, u32* cursor, u32 B) {
    __shared__ u32 part[1024];
    const u32 w = blockIdx.x;
    const u32 T = blockDim.x;
    const u32 tid = threadIdx.x;
    const u32 per = (B + T - 1) / T;
    const u32 lo = tid * per;
    const u32 hi = min(lo + per, B);
    const u32* cw = counts + (u64)w * B;
    u32 sum = 0;
    for (u32 b = lo; b < hi; b++) sum += cw[b];
    part[tid] = sum;
    __syncthreads();
    for (u32 d = 1; d < T; d <<= 1) {
        u32 v = tid >= d ? part[tid - d] : 0;
        __syncthreads();
        part[tid] += v;
        __syncthreads();
    }
    u32 run = part[tid] - sum;  // exclusive prefix of this thread's chunk
    u32* ow = offsets + (u64)w * B;
    for (u32 b = lo; b < hi; b++) {
        ow[b] = run;
        if (cursor) cursor[(u64)w * B + b] = run;
        run += cw[b];
    }
}

// Block (tile, window): offsets and cursors of the tile's buckets, from the tile's offset.
extern "C" __global__ void msm_tile_scan(const u32* counts, const u32* tile_offsets, u32* offsets, u32* cursor, u32 B) {
    const u32 tiles = gridDim.x;
    const u64 w = blockIdx.y;
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    u32 v = b < B ? counts[w * B + b] : 0;
    u32 total;
    u32 incl = block_inclusive_scan(v, &total);
    if (b < B) {
        u32 o = tile_offsets[w * tiles + blockIdx.x] + incl - v;
        offsets[w * B + b] = o;
        cursor[w * B + b] = o;
    }
}

// One pass (small windows): windows [w0, w1), digit d of point i to its bucket's next place.
// Window w's list is sorted[w · stride, w · stride + its digit count); stride bounds the digits
// of a window (the plan's nonzero scalars, at most n), and a digit past it is dropped rather than
// written over the next window (a wrong bound gives a wrong sum, which the self-check catches, not
// a stray write).
extern "C" __global__ void msm_scatter(const u32* scalars, u32* cursor, u32* sorted, u64 n, u64 stride, u32 c, u32 w0, u32 w1) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Digits dg(scalars + 8 * i, c);
    const u32 B = 1u << (c - 1);
    for (u32 w = 0; w < w1; w++) {
        u32 d = dg.next(w);
        if (w < w0 || d == NO_DIGIT) continue;
        u32 pos = atomicAdd(&cursor[(u64)w * B + (d & 0x7fffffffu)], 1u);
        if (pos < stride) sorted[(u64)w * stride + pos] = (u32)i | (d & 0x80000000u);
    }
}

// Bins a window of the two-pass sort's coarse pass (msm.rs `SORT_BINS`).
#define MSM_SORT_BINS 32

// Two passes (wide windows), the coarse one: windows [w0, w1), digit d of point i goes, as the
// record (bucket << 32) | i | sign, to records[(w - w0) stride + p], p the next place of its bin of
// 2^bin_bits buckets (at most MSM_SORT_BINS bins a window; a bin's places start at its first
// bucket's offset; bin_fill[w · MSM_SORT_BINS + bin] counts the places taken). A block counts its
// digits per bin in shared memory and takes each bin's places with one atomic, so the bins'
// counters (a few hundred, hit by every digit) see one atomic per block and bin, and a block's
// records of a bin are one run. Any block size (the host emulation runs small blocks).
extern "C" __global__ void msm_scatter_coarse(const u32* scalars, const u32* offsets, u32* bin_fill, u64* records, u64 n,
                                              u64 stride, u32 c, u32 w0, u32 w1, u32 bin_bits) {
    __shared__ u32 count[MSM_SORT_BINS], base[MSM_SORT_BINS];
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = i < n;
    Digits dg(scalars + 8 * (live ? i : 0), c);
    const u32 B = 1u << (c - 1);
    const u32 bins = ((B - 1) >> bin_bits) + 1;
    for (u32 w = 0; w < w1; w++) {
        const u32 d = dg.next(w);
        if (w < w0) continue;
        for (u32 k = threadIdx.x; k < MSM_SORT_BINS; k += blockDim.x) count[k] = 0;
        __syncthreads();
        const bool has = live && d != NO_DIGIT;
        const u32 bucket = d & 0x7fffffffu, bin = bucket >> bin_bits;
        const u32 rank = has ? atomicAdd(&count[bin], 1u) : 0;
        __syncthreads();
        for (u32 k = threadIdx.x; k < bins; k += blockDim.x)
            base[k] = offsets[(u64)w * B + (k << bin_bits)] + atomicAdd(&bin_fill[w * MSM_SORT_BINS + k], count[k]);
        __syncthreads();
        if (has && base[bin] + rank < stride)
            records[(u64)(w - w0) * stride + base[bin] + rank] = (u64)bucket << 32 | (u32)i | (d & 0x80000000u);
    }
}

// A window's digit count as the kernels after the sort see it: at most the lists' stride.
__device__ __forceinline__ u32 window_total(const u32* offsets, const u32* counts, u64 w, u32 B, u64 stride) {
    const u32 total = offsets[w * B + B - 1] + counts[w * B + B - 1];
    return total < stride ? total : (u32)stride;
}

// Record r of windows [w0, w1) (r < (w1 - w0) stride; window w0 + r / stride, place r mod
// stride, which holds a record below the window's digit count `total`): its index to the
// bucket's next place.
extern "C" __global__ void msm_scatter_fine(const u64* records, const u32* offsets, const u32* counts, u32* cursor, u32* sorted,
                                            u64 stride, u32 w0, u32 w1, u32 B) {
    const u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= (u64)(w1 - w0) * stride) return;
    const u64 w = w0 + r / stride;
    const u32 p = (u32)(r % stride);
    if (p >= window_total(offsets, counts, w, B, stride)) return;
    const u64 rec = records[r];
    const u32 pos = atomicAdd(&cursor[w * B + (u32)(rec >> 32)], 1u);
    if (pos < stride) sorted[w * stride + pos] = (u32)rec;
}

// The bucket holding sorted position p of a window: the largest b with offsets[b] <= p (that
// bucket is never empty, as the next offset is > p). p must be below the window's total.
__device__ __forceinline__ u32 bucket_at(const u32* ow, u32 B, u32 p) {
    u32 lo = 0, hi = B;  // invariant: ow[lo] <= p, and ow[hi] > p or hi == B
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (ow[mid] <= p) lo = mid; else hi = mid;
    }
    return lo;
}

// A window's share per accumulation thread: its digits spread evenly over the window's tpw
// threads (tpw = ceil(stride / per), so the share is at most `per`, the plan's share for a window
// of `stride` digits, the most a window can hold). Zero digits take no place, so sparse scalars
// (the tails of a witness that is mostly bits, ~1 % of them nonzero in a PoRep partition) still
// keep every thread at work, each with a smaller share, instead of leaving all but the first few
// threads of each window idle while those add `per` points each. Every kernel after the sort
// derives the shares the same way.
__device__ __forceinline__ u32 window_share(u32 total, u64 tpw) {
    return max(1u, (u32)((total + tpw - 1) / tpw));
}

// The rounds of a lockstep block: the largest share of the windows its threads fall in (0 for a
// block past the last window). A function of the block index only, so every thread of the block
// gets the same count and meets the same barriers.
__device__ __forceinline__ u32 block_rounds(const u32* offsets, const u32* counts, u64 tpw, u32 nwin, u32 B, u64 stride) {
    const u64 first = (u64)blockIdx.x * blockDim.x;
    const u64 end = min(first + blockDim.x, tpw * nwin);
    if (first >= end) return 0;
    u32 rounds = 0;
    for (u64 w = first / tpw; w <= (end - 1) / tpw; w++)
        rounds = max(rounds, window_share(window_total(offsets, counts, w, B, stride), tpw));
    return rounds;
}

// LOCKSTEP: every thread of the block runs `block_rounds` rounds (idle ones too, doing nothing) with a
// barrier after each, so the block's warps walk the long, fully inlined addition together and
// share the instruction cache instead of missing it at different places (G1: one block of 512
// threads per SM, `msm_accumulate_g1_lockstep`; the same for G2, whose addition is made of calls,
// was 5 % slower on an H200).
template <class F, bool INLINE, bool LOCKSTEP>
__device__ __forceinline__ void accumulate(const u32* bases, const u32* sorted, const u32* offsets, const u32* counts,
                                           u32* buckets, u32* partials, u64 stride, u32 nwin, u32 B, u32 per) {
    const u64 tpw = (stride + per - 1) / per;  // threads per window
    const u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    bool live = idx < tpw * nwin;
    if (!LOCKSTEP && !live) return;
    const u64 w = live ? idx / tpw : 0;
    const u32 t = (u32)(idx - w * tpw);
    const u32* ow = offsets + w * B;
    const u32* cw = counts + w * B;
    const u32 total = live ? window_total(offsets, counts, w, B, stride) : 0;
    const u32 share = live ? window_share(total, tpw) : 1;
    const u32 lo = live ? t * share : 0;
    live = live && lo < total;
    if (!LOCKSTEP && !live) return;
    const u32 hi = live ? min(lo + share, total) : lo;
    const u32* list = sorted + w * stride;
    u32* bw = buckets + (u64)Xyzz<F>::WORDS * (w * B);

    u32 b = live ? bucket_at(ow, B, lo) : 0;
    bool head = live && ow[b] < lo;  // the run continues a bucket that began in an earlier share
    u32 run_end = live ? ow[b] + cw[b] : 0;
    Xyzz<F> acc = Xyzz<F>::inf();
    const u32 rounds = LOCKSTEP ? block_rounds(offsets, counts, tpw, nwin, B, stride) : hi - lo;
    for (u32 k = 0; k < rounds; k++) {
        const u32 p = lo + k;
        if (p < hi) {
            if (p == run_end) {
                if (head) { acc.store(partials + (u64)Xyzz<F>::WORDS * idx); head = false; }
                else acc.store(bw + (u64)Xyzz<F>::WORDS * b);
                acc = Xyzz<F>::inf();
                do { b++; } while (b < B - 1 && cw[b] == 0);
                run_end = ow[b] + cw[b];
            }
            u32 e = list[p];
            Affine<F> pt = Affine<F>::load(bases + (u64)Affine<F>::WORDS * (e & 0x7fffffffu));
            if (e & 0x80000000u) pt = pt.neg();
            acc = INLINE ? acc.add_affine_inline(pt) : acc.add_affine(pt);
        }
        if (LOCKSTEP) __syncthreads();
    }
    if (!live) return;
    if (head) acc.store(partials + (u64)Xyzz<F>::WORDS * idx);
    else acc.store(bw + (u64)Xyzz<F>::WORDS * b);
}

// The calling thread's share of a window's sorted points, for the kernels after the
// accumulation: window w, share t of the window's tpw, its offsets and counts, the window's
// total, the share's length per (`window_share`) and first position lo; ok: a share that holds
// points.
struct Share {
    u64 idx, tpw, w;
    u32 t, total, lo, per;
    const u32* ow;
    const u32* cw;
    bool ok;
    __device__ __forceinline__ Share(const u32* offsets, const u32* counts, u64 stride, u32 nwin, u32 B, u32 plan_per)
        : idx((u64)blockIdx.x * blockDim.x + threadIdx.x), tpw((stride + plan_per - 1) / plan_per) {
        const bool in = idx < tpw * nwin;
        w = in ? idx / tpw : 0;
        t = (u32)(idx - w * tpw);
        ow = offsets + w * B;
        cw = counts + w * B;
        total = in ? window_total(offsets, counts, w, B, stride) : 0;
        per = window_share(total, tpw);
        lo = t * per;
        ok = in && lo < total;
    }
};

// Round r of the tree fold of head partials (between the accumulation and the fix-up): the head
// partials of the shares first ..= last that a bucket spills into are summed pairwise, so that
// after ceil(log2(threads per window)) rounds the one of share `first` holds them all. Thread t
// adds t + 2^r into t when t - first is a multiple of 2^(r+1) and t + 2^r <= last (t + 2^r is
// not written in that round). A bucket spanning thousands of shares (heavily repeated scalars)
// costs log2 rounds instead of one thread adding its partials in a row.
template <class F>
__device__ __forceinline__ void fold_heads(const u32* offsets, const u32* counts, u32* partials, u64 stride, u32 nwin, u32 B, u32 per,
                                           u32 r) {
    const Share sh(offsets, counts, stride, nwin, B, per);
    if (!sh.ok) return;
    const u32* ow = sh.ow;
    const u32 b = bucket_at(ow, B, sh.lo);
    if (ow[b] >= sh.lo) return;  // the bucket starts in this share: no head partial
    const u32 first = ow[b] / sh.per + 1, last = (min(ow[b] + sh.cw[b], sh.total) - 1) / sh.per;
    const u32 step = 1u << r;
    if (((sh.t - first) & (2 * step - 1)) != 0 || sh.t + step > last) return;
    u32* mine = partials + (u64)Xyzz<F>::WORDS * sh.idx;
    Xyzz<F>::load(mine).add(Xyzz<F>::load(mine + (u64)Xyzz<F>::WORDS * step)).store(mine);
}

// Thread (w, t): if the bucket at the last position of t's share starts in that share and runs
// past it, adds the head partials of the following threads into the bucket's sum: the one of
// thread t + 1 when they were folded first (`folded`), else each in a row.
template <class F>
__device__ __forceinline__ void fixup(const u32* offsets, const u32* counts, u32* buckets, const u32* partials, u64 stride,
                                      u32 nwin, u32 B, u32 per, u32 folded) {
    const Share sh(offsets, counts, stride, nwin, B, per);
    if (!sh.ok || sh.lo + sh.per >= sh.total) return;
    const u32 hi = sh.lo + sh.per;
    const u32 b = bucket_at(sh.ow, B, hi - 1);
    const u32 end = min(sh.ow[b] + sh.cw[b], sh.total);
    if (sh.ow[b] < sh.lo || end <= hi) return;
    u32* slot = buckets + (u64)Xyzz<F>::WORDS * (sh.w * B + b);
    Xyzz<F> acc = Xyzz<F>::load(slot);
    if (folded) acc = acc.add(Xyzz<F>::load(partials + (u64)Xyzz<F>::WORDS * (sh.idx + 1)));
    else for (u64 k = sh.idx + 1; (u64)(k - sh.w * sh.tpw) * sh.per < end; k++) acc = acc.add(Xyzz<F>::load(partials + (u64)Xyzz<F>::WORDS * k));
    acc.store(slot);
}

// running += *p; acc += running (a call: the two sums stay in the caller's frame).
template <class F>
__device__ __noinline__ void reduce_step(Xyzz<F>& running, Xyzz<F>& acc, const u32* p) {
    running = running.add(Xyzz<F>::load(p));
    acc = acc.add(running);
}

template <class F>
__device__ __forceinline__ void bucket_reduce(const u32* buckets, u32* a_out, u32* q_out, u32 nwin, u32 B, u32 nseg) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (u64)nwin * nseg) return;
    u64 w = idx / nseg;
    u32 s = (u32)(idx - w * nseg);
    u32 len = B / nseg;
    u32 lo = s * len;
    const u32* bw = buckets + (u64)Xyzz<F>::WORDS * (w * B);
    Xyzz<F> running = Xyzz<F>::inf(), acc = Xyzz<F>::inf();
    for (u32 b = lo + len; b-- > lo;) reduce_step(running, acc, bw + (u64)Xyzz<F>::WORDS * b);
    acc.store(a_out + (u64)Xyzz<F>::WORDS * idx);
    if (q_out == nullptr) return;  // one segment per window: A_0 is the window sum
    for (u32 k = len; k > 1; k >>= 1) running = running.dbl();
    running.store(q_out + (u64)Xyzz<F>::WORDS * idx);
}

// One pair (or a lone last term when !two) of a round; a call, like reduce_step, so that the
// kernel keeps few registers.
template <class F>
__device__ __noinline__ void pair_step(const u32* a_in, const u32* q_in, bool two, u32* a_out, u32* q_out) {
    typedef Xyzz<F> X;
    if (q_out != nullptr) {
        X q = X::load(q_in);
        if (two) q = q.add(X::load(q_in + X::WORDS));
        q.dbl().store(q_out);
    }
    X a = X::load(a_in);  // (Q_2j+1 is read twice, so that at most two points are live)
    if (two) a = a.add(X::load(a_in + X::WORDS)).add(X::load(q_in + X::WORDS));
    a.store(a_out);
}

// Thread (w, j) of a round over m terms per window (in: A and Q, w * m + i; out: ceil(m / 2)
// terms per window, w * ceil(m / 2) + j). A missing term 2j + 1 is the point at infinity. q_out
// may be null (the last round: one term per window, whose Q is not needed).
template <class F>
__device__ __forceinline__ void reduce_pairs(const u32* a_in, const u32* q_in, u32* a_out, u32* q_out, u32 nwin, u32 m) {
    typedef Xyzz<F> X;
    const u32 mo = (m + 1) / 2;
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (u64)nwin * mo) return;
    u64 w = idx / mo;
    u32 j = (u32)(idx - w * mo);
    const u64 i0 = w * m + 2 * j;
    pair_step<F>(a_in + (u64)X::WORDS * i0, q_in + (u64)X::WORDS * i0, 2 * j + 1 < m, a_out + (u64)X::WORDS * idx,
                 q_out == nullptr ? nullptr : q_out + (u64)X::WORDS * idx);
}

extern "C" __global__ void __launch_bounds__(128, CUZK_G1_MIN_BLOCKS) msm_accumulate_g1(const u32* bases, const u32* sorted, const u32* offsets,
        const u32* counts, u32* buckets, u32* partials, u64 stride, u32 nwin, u32 B, u32 per) {
    accumulate<Fp, true, false>(bases, sorted, offsets, counts, buckets, partials, stride, nwin, B, per);
}
// Threads of a lockstep G1 block (one block an SM): 512 = 16 warps at 128 registers. The host
// takes the block size from the kernel's attribute (msm.rs, accumulate_kernel).
#ifndef CUZK_G1_LOCKSTEP_THREADS
#define CUZK_G1_LOCKSTEP_THREADS 512
#endif
extern "C" __global__ void __launch_bounds__(CUZK_G1_LOCKSTEP_THREADS, 1) msm_accumulate_g1_lockstep(const u32* bases, const u32* sorted, const u32* offsets,
        const u32* counts, u32* buckets, u32* partials, u64 stride, u32 nwin, u32 B, u32 per) {
    accumulate<Fp, true, true>(bases, sorted, offsets, counts, buckets, partials, stride, nwin, B, per);
}
extern "C" __global__ void CUZK_G2_BOUNDS msm_accumulate_g2(const u32* bases, const u32* sorted, const u32* offsets,
        const u32* counts, u32* buckets, u32* partials, u64 stride, u32 nwin, u32 B, u32 per) {
    accumulate<Fp2, false, false>(bases, sorted, offsets, counts, buckets, partials, stride, nwin, B, per);
}
extern "C" __global__ void __launch_bounds__(128) msm_fold_heads_g1(const u32* offsets, const u32* counts, u32* partials, u64 stride,
        u32 nwin, u32 B, u32 per, u32 r) {
    fold_heads<Fp>(offsets, counts, partials, stride, nwin, B, per, r);
}
extern "C" __global__ void __launch_bounds__(128) msm_fold_heads_g2(const u32* offsets, const u32* counts, u32* partials, u64 stride,
        u32 nwin, u32 B, u32 per, u32 r) {
    fold_heads<Fp2>(offsets, counts, partials, stride, nwin, B, per, r);
}
extern "C" __global__ void __launch_bounds__(128) msm_fixup_g1(const u32* offsets, const u32* counts, u32* buckets,
        const u32* partials, u64 stride, u32 nwin, u32 B, u32 per, u32 folded) {
    fixup<Fp>(offsets, counts, buckets, partials, stride, nwin, B, per, folded);
}
extern "C" __global__ void __launch_bounds__(128) msm_fixup_g2(const u32* offsets, const u32* counts, u32* buckets,
        const u32* partials, u64 stride, u32 nwin, u32 B, u32 per, u32 folded) {
    fixup<Fp2>(offsets, counts, buckets, partials, stride, nwin, B, per, folded);
}
extern "C" __global__ void __launch_bounds__(128) msm_bucket_reduce_g1(const u32* buckets, u32* a_out, u32* q_out, u32 nwin, u32 B,
        u32 nseg) {
    bucket_reduce<Fp>(buckets, a_out, q_out, nwin, B, nseg);
}
// Three blocks an SM (168 registers): without the cap, ptxas took 190 for it (two blocks).
extern "C" __global__ void __launch_bounds__(128, 3) msm_bucket_reduce_g2(const u32* buckets, u32* a_out, u32* q_out, u32 nwin, u32 B,
        u32 nseg) {
    bucket_reduce<Fp2>(buckets, a_out, q_out, nwin, B, nseg);
}
extern "C" __global__ void __launch_bounds__(128) msm_reduce_pairs_g1(const u32* a_in, const u32* q_in, u32* a_out, u32* q_out,
        u32 nwin, u32 m) {
    reduce_pairs<Fp>(a_in, q_in, a_out, q_out, nwin, m);
}
extern "C" __global__ void __launch_bounds__(128) msm_reduce_pairs_g2(const u32* a_in, const u32* q_in, u32* a_out, u32* q_out,
        u32 nwin, u32 m) {
    reduce_pairs<Fp2>(a_in, q_in, a_out, q_out, nwin, m);
}
