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

// Product throughput (`cuzk bench kernels --only field`): each thread runs K independent chains
// x_k <- x_k * y, `rounds` times, from x_k = a[K i + k], y = b[i]; out[K i + k] is the result,
// so a test checks it against x·y^rounds. K chains in flight a thread expose the product's
// latency (K = 1) or its throughput (K = 4). `FP64` of the K chains run the Fr product on the
// FP64 pipe (fr52.cuh: y in R'-form), the others the 32-bit one.
template <class F, int K, int FP64>
__device__ __forceinline__ void mul_chains(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) {
    static_assert(FP64 == 0 || sizeof(F) == sizeof(Fr), "FP64-pipe products are Fr's");
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x[K > FP64 ? K - FP64 : 1];
    Fr52 d[FP64 > 0 ? FP64 : 1];
    _Pragma("unroll") for (int k = 0; k < K - FP64; k++) x[k] = F::load(a + (u64)F::WORDS * (K * i + k));
    _Pragma("unroll") for (int k = 0; k < FP64; k++) d[k] = Fr52::from(Fr::load(a + 8ull * (K * i + K - FP64 + k)));
    const F y = F::load(b + (u64)F::WORDS * i);
    Fr52 yd;
    if constexpr (FP64 > 0) yd = Fr52::from_r260(Fr::load(b + 8ull * i));
    _Pragma("unroll 1") for (u32 r = 0; r < rounds; r++) {
        _Pragma("unroll") for (int k = 0; k < K - FP64; k++) x[k] = x[k] * y;
        _Pragma("unroll") for (int k = 0; k < FP64; k++) d[k] = d[k] * yd;
    }
    _Pragma("unroll") for (int k = 0; k < K - FP64; k++) x[k].store(out + (u64)F::WORDS * (K * i + k));
    _Pragma("unroll") for (int k = 0; k < FP64; k++) d[k].to_fr().store(out + 8ull * (K * i + K - FP64 + k));
}
#define CUZK_CHAINS(name, F, K, FP64) \
    extern "C" __global__ void mul_chains_##name##_x##K(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) { mul_chains<F, K, FP64>(out, a, b, n, rounds); }
CUZK_CHAINS(fr, Fr, 1, 0)
CUZK_CHAINS(fr, Fr, 4, 0)
CUZK_CHAINS(fp, Fp, 1, 0)
CUZK_CHAINS(fp, Fp, 4, 0)
CUZK_CHAINS(fr52, Fr, 1, 1)      // all on the FP64 pipe
CUZK_CHAINS(fr52, Fr, 4, 4)
CUZK_CHAINS(frmix, Fr, 4, 2)     // two chains on each pipe
