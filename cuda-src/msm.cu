// Pippenger MSM over G1 and G2 with signed c-bit digits.
//
// 1. msm_digits: each scalar leaves Montgomery form and is cut into nwin signed digits in
//    [-2^(c-1), 2^(c-1)]; a digit d != 0 goes to bucket |d|-1 of its window (sign in bit 31),
//    and the bucket's count is incremented.
// 2. msm_scan: per window, exclusive prefix sums of the bucket counts (bucket offsets).
// 3. msm_scatter: counting sort of point indices by (window, bucket).
// 4. msm_accumulate_*: one thread per bucket sums its points (mixed XYZZ additions).
// 5. msm_bucket_reduce_*: per window, segments of buckets are reduced to sum_b (b+1) * S_b with
//    running sums; the segment's weight offset is applied by double-and-add.
// 6. reduce_sum_* (batch_add.cu) folds the segment results; the host combines the windows.

#define NO_DIGIT 0xffffffffu

extern "C" __global__ void msm_digits(const u32* scalars, u32* digits, u32* counts, u64 n, u32 c,
                                      u32 nwin) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = Fr::load(scalars + 8 * i).from_mont();
    const u32 B = 1u << (c - 1);
    const u32 full = 1u << c;
    u32 carry = 0;
    for (u32 w = 0; w < nwin; w++) {
        u32 bit = w * c;
        u32 limb = bit >> 5, sh = bit & 31;
        u64 chunk = 0;
        if (limb < 8) chunk = s.v[limb];
        if (limb + 1 < 8) chunk |= (u64)s.v[limb + 1] << 32;
        u32 d = (u32)((chunk >> sh) & (full - 1)) + carry;
        u32 out = NO_DIGIT;
        if (d > B) {
            carry = 1;
            d = full - d;  // negative digit, magnitude in [1, B)
            if (d != 0) out = (d - 1) | 0x80000000u;
        } else {
            carry = 0;
            if (d != 0) out = d - 1;
        }
        digits[(u64)w * n + i] = out;
        if (out != NO_DIGIT) atomicAdd(&counts[(u64)w * B + (out & 0x7fffffffu)], 1u);
    }
}

// One block per window; exclusive prefix sum of counts[w*B .. w*B+B) into offsets.
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
    u32* cu = cursor + (u64)w * B;
    for (u32 b = lo; b < hi; b++) { ow[b] = run; cu[b] = run; run += cw[b]; }
}

extern "C" __global__ void msm_scatter(const u32* digits, u32* cursor, u32* sorted, u64 n, u32 nwin,
                                       u32 B) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * nwin) return;
    u32 d = digits[idx];
    if (d == NO_DIGIT) return;
    u64 w = idx / n, i = idx - w * n;
    u32 pos = atomicAdd(&cursor[w * B + (d & 0x7fffffffu)], 1u);
    sorted[w * n + pos] = (u32)i | (d & 0x80000000u);
}

template <class F>
__device__ __forceinline__ void accumulate(const u32* bases, const u32* sorted, const u32* offsets,
                                           const u32* counts, u32* buckets, u64 n, u32 nwin, u32 B) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (u64)nwin * B) return;
    u64 w = idx / B;
    const u32* list = sorted + w * n + offsets[idx];
    const u32 cnt = counts[idx];
    Xyzz<F> acc = Xyzz<F>::inf();
    for (u32 k = 0; k < cnt; k++) {
        u32 e = list[k];
        Affine<F> p = Affine<F>::load(bases + (u64)Affine<F>::WORDS * (e & 0x7fffffffu));
        if (e & 0x80000000u) p = p.neg();
        acc = acc.add_affine(p);
    }
    acc.store(buckets + (u64)Xyzz<F>::WORDS * idx);
}

template <class F>
__device__ __forceinline__ void bucket_reduce(const u32* buckets, u32* out, u32 nwin, u32 B, u32 nseg) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (u64)nwin * nseg) return;
    u64 w = idx / nseg;
    u32 s = (u32)(idx - w * nseg);
    u32 len = B / nseg;
    u32 lo = s * len;
    const u32* bw = buckets + (u64)Xyzz<F>::WORDS * (w * B);
    Xyzz<F> running = Xyzz<F>::inf(), acc = Xyzz<F>::inf();
    for (u32 b = lo + len; b-- > lo;) {
        running = running.add(Xyzz<F>::load(bw + (u64)Xyzz<F>::WORDS * b));
        acc = acc.add(running);
    }
    // acc += lo * running (double-and-add over the bits of lo).
    Xyzz<F> mul = Xyzz<F>::inf();
    for (int bit = 31; bit >= 0; bit--) {
        mul = mul.dbl();
        if ((lo >> bit) & 1) mul = mul.add(running);
    }
    acc = acc.add(mul);
    acc.store(out + (u64)Xyzz<F>::WORDS * idx);
}

extern "C" __global__ void __launch_bounds__(256) msm_accumulate_g1(const u32* bases, const u32* sorted, const u32* offsets,
                                             const u32* counts, u32* buckets, u64 n, u32 nwin, u32 B) {
    accumulate<Fp>(bases, sorted, offsets, counts, buckets, n, nwin, B);
}
extern "C" __global__ void __launch_bounds__(256) msm_accumulate_g2(const u32* bases, const u32* sorted, const u32* offsets,
                                             const u32* counts, u32* buckets, u64 n, u32 nwin, u32 B) {
    accumulate<Fp2>(bases, sorted, offsets, counts, buckets, n, nwin, B);
}
extern "C" __global__ void __launch_bounds__(256) msm_bucket_reduce_g1(const u32* buckets, u32* out, u32 nwin, u32 B, u32 nseg) {
    bucket_reduce<Fp>(buckets, out, nwin, B, nseg);
}
extern "C" __global__ void __launch_bounds__(256) msm_bucket_reduce_g2(const u32* buckets, u32* out, u32 nwin, u32 B, u32 nseg) {
    bucket_reduce<Fp2>(buckets, out, nwin, B, nseg);
}
