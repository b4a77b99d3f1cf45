// The MSM scalar vectors of a recorded witness, split on the device (engine/src/gpu/spmv.rs,
// the host's `prover::splits`): output k takes w[idx[k]] (w = inputs ++ aux; idx == 0: w[base + k]),
// tail[k] is that scalar, or zero where it is one, and bit k of ones (u64 words, bit k % 64 of
// word k / 64) is set where it is one. One thread a word: 64 outputs, so the bitmap needs no
// atomics and the thread writes its word whole (the bits past n stay zero). *live (zeroed by the
// caller) gains the number of nonzero tail scalars, exactly: the MSM over the tail sizes its
// sorted lists and picks its window by it (engine/src/gpu/msm.rs, `MsmPlan::sparse`).

extern "C" __global__ void split_gather(u32* tail, u64* ones, u32* live, const u32* w, const u32* idx, u64 base, u64 n) {
    const u64 word = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 lo = word * 64;
    if (lo >= n) return;
    const u64 hi = lo + 64 < n ? lo + 64 : n;
    const Fr one = Fr::one();
    u64 bits = 0;
    u32 nonzero = 0;
    for (u64 k = lo; k < hi; k++) {
        const u64 src = idx ? (u64)idx[k] : base + k;
        const Fr v = Fr::load(w + 8 * src);
        if (v == one) {
            bits |= 1ull << (k - lo);
            Fr::zero().store(tail + 8 * k);
        } else {
            v.store(tail + 8 * k);
            nonzero += v.is_zero() ? 0 : 1;
        }
    }
    ones[word] = bits;
    if (nonzero) atomicAdd(live, nonzero);
}
