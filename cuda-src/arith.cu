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
// latency (K = 1) or its throughput (K = 4).
template <class F, int K>
__device__ __forceinline__ void mul_chains(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x[K];
    _Pragma("unroll") for (int k = 0; k < K; k++) x[k] = F::load(a + (u64)F::WORDS * (K * i + k));
    const F y = F::load(b + (u64)F::WORDS * i);
    _Pragma("unroll 1") for (u32 r = 0; r < rounds; r++) {
        _Pragma("unroll") for (int k = 0; k < K; k++) x[k] = x[k] * y;
    }
    _Pragma("unroll") for (int k = 0; k < K; k++) x[k].store(out + (u64)F::WORDS * (K * i + k));
}
extern "C" __global__ void mul_chains_fr1(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) { mul_chains<Fr, 1>(out, a, b, n, rounds); }
extern "C" __global__ void mul_chains_fr4(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) { mul_chains<Fr, 4>(out, a, b, n, rounds); }
extern "C" __global__ void mul_chains_fp1(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) { mul_chains<Fp, 1>(out, a, b, n, rounds); }
extern "C" __global__ void mul_chains_fp4(u32* out, const u32* a, const u32* b, u64 n, u32 rounds) { mul_chains<Fp, 4>(out, a, b, n, rounds); }
