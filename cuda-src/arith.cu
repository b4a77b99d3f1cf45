// Element-wise field kernels used by the tests to check Fr, Fp and Fp2 against blstrs.
// op: 0 = add, 1 = sub, 2 = mul, 3 = sqr, 4 = neg, 5 = from_mont.

template <class F>
__device__ __forceinline__ void arith(u32* out, const u32* a, const u32* b, u64 n, u32 op) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = F::load(a + (u64)F::WORDS * i), y = F::load(b + (u64)F::WORDS * i), r;
    switch (op) {
        case 0: r = x + y; break;
        case 1: r = x - y; break;
        case 2: r = x * y; break;
        case 3: r = x.sqr(); break;
        default: r = x.neg(); break;
    }
    r.store(out + (u64)F::WORDS * i);
}

extern "C" __global__ void arith_fr(u32* out, const u32* a, const u32* b, u64 n, u32 op) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (op == 5) {
        if (i < n) Fr::load(a + 8 * i).from_mont().store(out + 8 * i);
        return;
    }
    arith<Fr>(out, a, b, n, op);
}
extern "C" __global__ void arith_fp(u32* out, const u32* a, const u32* b, u64 n, u32 op) { arith<Fp>(out, a, b, n, op); }
extern "C" __global__ void arith_fp2(u32* out, const u32* a, const u32* b, u64 n, u32 op) { arith<Fp2>(out, a, b, n, op); }
