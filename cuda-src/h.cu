// Element-wise steps around the NTTs: coset scaling with index permutation, the product of the
// coset evaluations, the H step's last pass (from the coset, less C, over Z) and the bit-reversal
// copy.

// out[p or k] = in[p] * lo[k & mask] * hi[k >> lo_bits], with k = bitrev(p) when rev_in != 0,
// else k = p; the result goes to index k when out_perm != 0, else to p (in place allowed then).
// The tables hold powers of the coset generator (and any constant factor such as 1/n).
extern "C" __global__ void scale_permute(u32* out, const u32* in, const u32* lo, const u32* hi,
                                         u32 lo_bits, u32 logn, u32 rev_in, u32 out_perm) {
    u64 n = 1ull << logn;
    u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    u64 k = rev_in ? bitrev(p, logn) : p;
    u64 mask = (1ull << lo_bits) - 1;
    Fr f = Fr::load(lo + 8 * (k & mask)) * Fr::load(hi + 8 * (k >> lo_bits));
    Fr v = Fr::load(in + 8 * p) * f;
    v.store(out + 8 * (out_perm ? k : p));
}

// a[i] = a[i] * b[i]: the coset evaluations of the product a·b.
extern "C" __global__ void h_product(u32* a, const u32* b, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr v = Fr::load(a + 8 * i) * Fr::load(b + 8 * i);
    v.store(a + 8 * i);
}

// The H step's last pass. H's coefficients are the interpolation, on the coset, of
// (a·b − c)/Z: by linearity that is (interp(a·b) − c)/Z(g) (Z is the constant g^n − 1 there, and
// interpolating c's coset evaluations gives c's coefficients back), so c needs no transform to the
// coset and back. With `a` the inverse DIF of the product's coset evaluations and `c` the inverse
// DIF of c's evaluations (both bit-reversed, both n times the coefficients), k = bitrev(p):
//   out[k] = a[p] · lo[k & mask] · hi[k >> lo_bits] − c[p] · kappa,
// the tables holding g^-k / (n Z(g)) and kappa = 1 / (n Z(g)). `out` must not be `a` or `c`.
extern "C" __global__ void h_finish(u32* out, const u32* a, const u32* c, const u32* lo, const u32* hi, const u32* kappa,
                                    u32 lo_bits, u32 logn) {
    u64 n = 1ull << logn;
    u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    u64 k = bitrev(p, logn);
    u64 mask = (1ull << lo_bits) - 1;
    Fr f = Fr::load(lo + 8 * (k & mask)) * Fr::load(hi + 8 * (k >> lo_bits));
    Fr v = Fr::load(a + 8 * p) * f - Fr::load(c + 8 * p) * Fr::load(kappa);
    v.store(out + 8 * k);
}

// out[bitrev(i)] = in[i].
extern "C" __global__ void bitrev_copy(u32* out, const u32* in, u32 logn) {
    u64 n = 1ull << logn;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64 k = bitrev(i, logn);
    const uint4* src = (const uint4*)(in + 8 * i);
    uint4* dst = (uint4*)(out + 8 * k);
    uint4 a = src[0], b = src[1];
    dst[0] = a;
    dst[1] = b;
}
