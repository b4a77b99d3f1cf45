// Fr products on the FP64 pipe. An element is 5 limbs of 52 bits, each held exactly in a
// double; the Montgomery radix is R' = 2^260 (not blst's 2^256). A product by an operand in
// R'-form, y·2^260 mod r (`Fr52::from_r260`), maps blst's Montgomery form to itself:
// x·2^256 · y·2^260 / 2^260 = xy·2^256. So data stays in blst's form and only the constant side
// (a twiddle, a repeated factor) is kept in R'-form.
//
// Why it exists: on paper it is the way past the 32-bit product's ceiling. A 32 x 32 -> 64-bit
// IMAD.WIDE occupies the multiply pipe 4 cycles a warp; a DFMA is datasheet-rated at 2 cycles on
// the separate FP64 pipe. Each 52 x 52-bit limb product a·b (exact, < 2^104) is two DFMA and one
// DADD:
//   h = fma_rz(a, b, 2^104)          = 2^104 + floor(ab / 2^52)·2^52: bits BHI + hi
//   l = fma(a, b, (2^104 + 2^52) - h) = 2^52 + (ab mod 2^52):          bits BLO + lo
// (both exact: h lies in [2^104, 2^105), whose unit in the last place is 2^52, and l in
// [2^52, 2^53), whose unit is 1). The bit patterns are summed per column in 64-bit integers (ALU
// pipe) and the exponent bits taken off by the columns' initial values; a column gets at most 18
// terms below 2^52, so its sum never wraps.
// What it measured (`cuzk bench kernels --only field`, H200, 2026-12-01): 5.67e10 products/s,
// against 6.06e10 for field.cuh's product, and two chains of each a thread (frmix) 5.79e10. The
// FP64 instructions take ~4 cycles a warp, not 2, and the two kinds do not overlap; an NTT with a
// third of its products here (stage 1 of each radix-8 group) took 43.8 instead of 39.1 ms at
// 2^27. No transform uses it: it stays as the field bench's measurement of that ceiling.
//
// Bounds: limbs below 2^52, values below 2^256. For a, b < 2r the result
// (ab + m·r) / 2^260 < 4r^2/2^260 + r < 1.1r: below 2r, which is the form products take and
// return; `to_fr` reduces to [0, r).
__constant__ double FR52_R[5] = {(double)0xfffff00000001ull, (double)0x2fffe5bfefffull, (double)0x9a1d80553bda4ull,
                                 (double)0x7d483339d8080ull, (double)0x73eda753299dull};  // r's limbs

struct Fr52 {
    double l[5];

    static constexpr u64 MASK = (1ull << 52) - 1;
    static constexpr u64 BLO = 0x4330000000000000ull;  // the bits of 2^52 (l above)
    static constexpr u64 BHI = 0x4670000000000000ull;  // the bits of 2^104 (h above)
    static constexpr u64 RINV = 0xffffeffffffffull;    // -r^-1 mod 2^52

    // An integer below 2^52 as a double: 2^52 + x has x as its mantissa bits.
    static __device__ __forceinline__ double to_d(u64 x) { return __longlong_as_double((long long)(x | BLO)) - 0x1p52; }
    static __device__ __forceinline__ u64 bits(double x) { return (u64)__double_as_longlong(x); }

    // The limbs of a (below 2^256, as Fr holds it: blst's form or any other).
    static __device__ __forceinline__ Fr52 from(const Fr& a) {
        const u64 w0 = a.v[0] | (u64)a.v[1] << 32, w1 = a.v[2] | (u64)a.v[3] << 32;
        const u64 w2 = a.v[4] | (u64)a.v[5] << 32, w3 = a.v[6] | (u64)a.v[7] << 32;
        Fr52 r;
        r.l[0] = to_d(w0 & MASK);
        r.l[1] = to_d((w0 >> 52 | w1 << 12) & MASK);
        r.l[2] = to_d((w1 >> 40 | w2 << 24) & MASK);
        r.l[3] = to_d((w2 >> 28 | w3 << 36) & MASK);
        r.l[4] = to_d(w3 >> 16);
        return r;
    }
    // y·2^260 from y·2^256 (blst's form): the factor side of a product that keeps blst's form.
    static __device__ __forceinline__ Fr52 from_r260(const Fr& y) {
        const Fr y2 = y.dbl(), y4 = y2.dbl(), y8 = y4.dbl();
        return from(y8.dbl());
    }

    // The value reduced to [0, r), as Fr's limbs.
    __device__ __forceinline__ Fr to_fr() const {
        u64 c[5];
        _Pragma("unroll") for (int k = 0; k < 5; k++) c[k] = bits(l[k] + 0x1p52) & MASK;
        const u64 w0 = c[0] | c[1] << 52, w1 = c[1] >> 12 | c[2] << 40, w2 = c[2] >> 24 | c[3] << 28, w3 = c[3] >> 36 | c[4] << 16;
        const u32 t[8] = {(u32)w0, (u32)(w0 >> 32), (u32)w1, (u32)(w1 >> 32), (u32)w2, (u32)(w2 >> 32), (u32)w3, (u32)(w3 >> 32)};
        Fr r;
        Fr::reduce_once(r.v, t, 0);
        return r;
    }

    // The exponent bits that the terms of column k bring (see mul): product lows at i + j = k and
    // highs at i + j + 1 = k; reduction lows for j >= 1 (row i's j = 0 low is never added) and
    // highs at i + j + 1 = k.
    static __device__ constexpr u64 bias(int k) {
        u64 b = 0;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                if (i + j == k) b += j >= 1 ? 2 * BLO : BLO;
                if (i + j + 1 == k) b += 2 * BHI;
            }
        return b;
    }
    static __device__ __forceinline__ void limb_product(u64* c, double a, double b) {
        const double h = __fma_rz(a, b, 0x1p104);
        const double l = __fma_rn(a, b, (0x1p104 + 0x1p52) - h);
        c[0] += bits(l);
        c[1] += bits(h);
    }

    // Montgomery product a·b / 2^260 mod r, below 2r (operands below 2r).
    __device__ __forceinline__ Fr52 operator*(const Fr52& b) const {
        u64 c[10];
        _Pragma("unroll") for (int k = 0; k < 10; k++) c[k] = 0ull - bias(k);
        _Pragma("unroll") for (int i = 0; i < 5; i++)
            _Pragma("unroll") for (int j = 0; j < 5; j++) limb_product(c + i + j, l[i], b.l[j]);
        // Reduction, a row per limb: m = c_i·(-r^-1) mod 2^52 makes c_i + m·r_0 = 0 mod 2^52.
        // That low term is not added: c_i's low bits L plus it is 0 or 2^52 (1 iff L != 0).
        _Pragma("unroll") for (int i = 0; i < 5; i++) {
            const u64 L = c[i] & MASK;
            const double m = to_d((L * RINV) & MASK);
            c[i + 1] += (c[i] >> 52) + (L != 0 ? 1ull : 0ull);
            c[i + 1] += bits(__fma_rz(m, FR52_R[0], 0x1p104));
            _Pragma("unroll") for (int j = 1; j < 5; j++) limb_product(c + i + j, m, FR52_R[j]);
        }
        _Pragma("unroll") for (int k = 5; k < 9; k++) {
            c[k + 1] += c[k] >> 52;
            c[k] &= MASK;
        }
        Fr52 r;
        _Pragma("unroll") for (int k = 0; k < 5; k++) r.l[k] = to_d(c[5 + k]);
        return r;
    }
};
