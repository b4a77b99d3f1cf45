// a = A·w, b = B·w, c = C·w from a recorded constraint system (engine/src/recorded/): one matrix
// per launch, one thread per row. A row is entries ptr[r]..ptr[r + 1]; an entry is
// column | code << 32 and its coefficient the code's class (engine/src/recorded/coeff.rs):
//   bit 31 set:  general, table[code & 0x7fffffff] (Fr, Montgomery form);
//   otherwise:   ±k, k = code & 0x3fffffff (k >= 1), negative when bit 30 is set.
// ±1 costs one addition, ±2 a doubling and an addition, other small k and general coefficients
// a product (small k: two, k·R² to bring k to Montgomery form first). w is inputs ++ aux.

#define SPMV_TABLE 0x80000000u
#define SPMV_NEG 0x40000000u
#define SPMV_SMALL 0x3fffffffu

// R² mod r, the factor that takes a plain integer to Montgomery form (k·R²·R⁻¹ = k·R).
__device__ __forceinline__ Fr spmv_r2() {
    Fr r;
    const u32 R2[8] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu, 0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u};
    _Pragma("unroll") for (int i = 0; i < 8; i++) r.v[i] = R2[i];
    return r;
}

// v · k for a small k (1 <= k < 2^30).
__device__ __forceinline__ Fr spmv_mul_small(const Fr& v, u32 k) {
    if (k == 1) return v;
    if (k == 2) return v.dbl();
    Fr kk = Fr::zero();
    kk.v[0] = k;
    return v * (kk * spmv_r2());
}

extern "C" __global__ void spmv_rows(u32* out, const u64* ptr, const u64* ent, const u32* table, const u32* w, u64 rows) {
    u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    Fr acc = Fr::zero();
    for (u64 i = ptr[r]; i < ptr[r + 1]; i++) {
        const u64 e = ent[i];
        const u32 code = (u32)(e >> 32);
        const Fr v = Fr::load(w + 8 * (e & 0xffffffffull));
        if (code & SPMV_TABLE) {
            acc = acc + v * Fr::load(table + 8 * (u64)(code & ~SPMV_TABLE));
        } else {
            const Fr t = spmv_mul_small(v, code & SPMV_SMALL);
            acc = (code & SPMV_NEG) ? acc - t : acc + t;
        }
    }
    acc.store(out + 8 * r);
}

// The first row r < rows with a[r]·b[r] ≠ c[r] lowers *first (set to rows or more beforehand):
// `prepare`'s satisfiability check, on the device, over the products above.
extern "C" __global__ void spmv_unsatisfied(unsigned long long* first, const u32* a, const u32* b, const u32* c, u64 rows) {
    u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    if (!(Fr::load(a + 8 * r) * Fr::load(b + 8 * r) == Fr::load(c + 8 * r))) atomicMin(first, (unsigned long long)r);
}
