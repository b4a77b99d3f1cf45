// Montgomery arithmetic over a prime field in N 32-bit limbs (little-endian), generic over the
// parameter struct P (N, modulus M, ONE = R mod M, INV = -M^-1 mod 2^32). The in-memory layout is
// blst's: little-endian limbs in Montgomery form, so blstrs buffers are used as they are.
// Requires 2M < 2^(32N) (true for BLS12-381's Fr and Fp), so sums never overflow the top limb.
// Fp products as calls instead of inline code (smaller kernels, fewer instruction-fetch stalls
// in the point additions); a tuning switch, set with -DCUZK_FP_MUL_CALL=1.
#ifndef CUZK_FP_MUL_CALL
#define CUZK_FP_MUL_CALL 0
#endif

// Fr's reduction rows of the split product (CUZK_MUL_ALT=0) without the two products by
// M[0] = 1 and M[1] = 2^32 - 1 (additions instead); a tuning switch, set with
// -DCUZK_FR_FAST_REDUCE=1 (checked on the host by engine/tests/cuda_math_on_host.rs).
#ifndef CUZK_FR_FAST_REDUCE
#define CUZK_FR_FAST_REDUCE 0
#endif

// Fp squares as a dedicated squaring (78 instead of 144 products) and a separate reduction; a
// tuning switch, set with -DCUZK_FP_SQR=1.
#ifndef CUZK_FP_SQR
#define CUZK_FP_SQR 0
#endif

// Montgomery products with alternating accumulators (Field::mul_alt: the two accumulators swap
// roles each row instead of being merged each row: Fp product 560 -> 440 SASS instructions; on
// an H200 MSM G1 2^26 -6 %, G2 2^24 -4 %, NTT 2^27 -7 %). The default; -DCUZK_MUL_ALT=0 gives
// the per-row merge (Field::mul_split).
#ifndef CUZK_MUL_ALT
#define CUZK_MUL_ALT 1
#endif

template <class P>
struct Field {
    static constexpr int N = P::N;
    static constexpr int WORDS = P::N;
    u32 v[N];

    static __device__ __forceinline__ Field zero() { Field r; _Pragma("unroll") for (int i = 0; i < N; i++) r.v[i] = 0; return r; }
    static __device__ __forceinline__ Field one() { Field r; _Pragma("unroll") for (int i = 0; i < N; i++) r.v[i] = P::ONE[i]; return r; }

    __device__ __forceinline__ bool is_zero() const {
        u32 acc = 0;
        _Pragma("unroll") for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const Field& o) const {
        u32 acc = 0;
        _Pragma("unroll") for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }

    // r = t - M if t >= M else t, for t < 2M held in N limbs plus a top limb `hi`.
    static __device__ __forceinline__ void reduce_once(u32* r, const u32* t, u32 hi) {
        u32 s[N];
        s[0] = sub_cc(t[0], P::M[0]);
        _Pragma("unroll") for (int i = 1; i < N; i++) s[i] = subc_cc(t[i], P::M[i]);
        u32 borrow = subc(hi, 0);
        bool keep = borrow != 0;
        _Pragma("unroll") for (int i = 0; i < N; i++) r[i] = keep ? t[i] : s[i];
    }

    __device__ __forceinline__ Field operator+(const Field& b) const {
        u32 t[N];
        t[0] = add_cc(v[0], b.v[0]);
        _Pragma("unroll") for (int i = 1; i < N; i++) t[i] = addc_cc(v[i], b.v[i]);
        u32 hi = addc(0, 0);
        Field r; reduce_once(r.v, t, hi); return r;
    }

    // a + b without the reduction, below 2M: only as an input of a product (with a < M, b < M).
    // Valid where 4M < 2^(32N) (Fp): then x, y < 2M give x·y < M·2^(32N), and the product's
    // running value and result stay within the bounds of operator* (result below M).
    __device__ __forceinline__ Field add_lazy(const Field& b) const {
        static_assert(P::M[N - 1] < (1u << 30), "add_lazy needs 4M < 2^(32N)");
        Field r;
        r.v[0] = add_cc(v[0], b.v[0]);
        _Pragma("unroll") for (int i = 1; i < N - 1; i++) r.v[i] = addc_cc(v[i], b.v[i]);
        r.v[N - 1] = addc(v[N - 1], b.v[N - 1]);
        return r;
    }

    __device__ __forceinline__ Field operator-(const Field& b) const {
        u32 t[N];
        t[0] = sub_cc(v[0], b.v[0]);
        _Pragma("unroll") for (int i = 1; i < N; i++) t[i] = subc_cc(v[i], b.v[i]);
        u32 borrow = subc(0, 0);
        u32 mask = borrow;  // all ones when a < b
        Field r;
        r.v[0] = add_cc(t[0], P::M[0] & mask);
        _Pragma("unroll") for (int i = 1; i < N - 1; i++) r.v[i] = addc_cc(t[i], P::M[i] & mask);
        r.v[N - 1] = addc(t[N - 1], P::M[N - 1] & mask);
        return r;
    }

    __device__ __forceinline__ Field neg() const {
        if (is_zero()) return *this;
        Field r;
        r.v[0] = sub_cc(P::M[0], v[0]);
        _Pragma("unroll") for (int i = 1; i < N - 1; i++) r.v[i] = subc_cc(P::M[i], v[i]);
        r.v[N - 1] = subc(P::M[N - 1], v[N - 1]);
        return r;
    }

    __device__ __forceinline__ Field dbl() const { return *this + *this; }

    // e += the even limbs of a times b, a[j]·b at limbs (j, j+1), the chain's carry into e[N].
    static __device__ __forceinline__ void mac_even(u32* e, const u32* a, u32 b) {
        e[0] = mad_lo_cc(a[0], b, e[0]);
        e[1] = madc_hi_cc(a[0], b, e[1]);
        _Pragma("unroll") for (int j = 2; j < N; j += 2) {
            e[j] = madc_lo_cc(a[j], b, e[j]);
            e[j + 1] = madc_hi_cc(a[j], b, e[j + 1]);
        }
        e[N] = addc(e[N], 0);
    }

    // o += the odd limbs of a times b, a[j]·b at limbs (j-1, j) of o (o counts from 2^32); the
    // chain's carry is left in the carry flag.
    static __device__ __forceinline__ void mac_odd(u32* o, const u32* a, u32 b) {
        o[0] = mad_lo_cc(a[1], b, o[0]);
        o[1] = madc_hi_cc(a[1], b, o[1]);
        _Pragma("unroll") for (int j = 3; j < N; j += 2) {
            o[j - 1] = madc_lo_cc(a[j], b, o[j - 1]);
            o[j] = madc_hi_cc(a[j], b, o[j]);
        }
    }

    // e + o·2^32 += a·b, the even limbs of a into e at (j, j+1) and the odd ones into o at
    // (j-1, j), so each chain alternates mad.lo/mad.hi on one operand pair (which ptxas fuses into
    // wide multiply-adds) and never adds twice to a limb; the chains' carries go to e[N], o[N].
    static __device__ __forceinline__ void mac_row(u32* e, u32* o, const u32* a, u32 b) {
        mac_even(e, a, b);
        mac_odd(o, a, b);
        o[N] = addc(o[N], 0);
    }

    // Fr's modulus: M[0] = 1, M[1] = 2^32 - 1 and INV = 2^32 - 1 (so m = e0·INV = -e0).
    static constexpr bool M01_SPECIAL = P::INV == 0xffffffffu && P::M[0] == 1u && P::M[1] == 0xffffffffu;

    // e + o·2^32 += m·M as mac_even(e, M, m) and mac_odd(o, M, m) do, for M01_SPECIAL moduli with
    // m = -e0, without multiplying by M[0] and M[1]: m·M[0] = m, so e0 + m·M[0] is 0 with a carry
    // iff e0 != 0; m·M[1] = m·2^32 - m has the low word -m = e0 and the high word m - (e0 != 0).
    // The odd chain's carry is left in the carry flag.
    static __device__ __forceinline__ void mac_m01(u32* e, u32* o, u32 e0, u32 m) {
        e[0] = add_cc(e0, m);
        e[1] = addc_cc(e[1], 0u);
        _Pragma("unroll") for (int j = 2; j < N; j += 2) {
            e[j] = madc_lo_cc(m, P::M[j], e[j]);
            e[j + 1] = madc_hi_cc(m, P::M[j], e[j + 1]);
        }
        e[N] = addc(e[N], 0u);
        o[0] = add_cc(o[0], e0);
        o[1] = addc_cc(o[1], m - (e0 != 0u ? 1u : 0u));
        _Pragma("unroll") for (int j = 3; j < N; j += 2) {
            o[j - 1] = madc_lo_cc(m, P::M[j], o[j - 1]);
            o[j] = madc_hi_cc(m, P::M[j], o[j]);
        }
    }

    // One Montgomery row on the running value e + o·2^32 (N+1 limbs each): adds m·M with
    // m = e[0]·INV, so e[0] becomes 0, then divides by 2^32 into e (o is cleared).
    static __device__ __forceinline__ void reduce_row(u32* e, u32* o) {
        const u32 e0 = e[0];
        const u32 m = e0 * P::INV;
        if constexpr (CUZK_FR_FAST_REDUCE && M01_SPECIAL) {
            mac_m01(e, o, e0, m);
            o[N] = addc(o[N], 0);
        } else {
            mac_row(e, o, P::M, m);
        }
        e[0] = add_cc(e[1], o[0]);
        _Pragma("unroll") for (int k = 1; k < N; k++) e[k] = addc_cc(e[k + 1], o[k]);
        e[N] = addc(o[N], 0);
        _Pragma("unroll") for (int k = 0; k < N + 1; k++) o[k] = 0;
    }

    // Montgomery product a*b*R^-1 mod M, CIOS with split accumulators: per row, a·b_i is added
    // (mac_row) and the row reduced (reduce_row); the running value stays below 2M.
    __device__ __forceinline__ Field operator*(const Field& b) const {
        if constexpr (N == 12 && CUZK_FP_MUL_CALL) return mul_call(b);
        else return mul_inline(b);
    }
    // The product as a call, its operands passed by value to a static function, so they travel
    // in registers. (As a member taking a reference, the caller stored both operands to its stack
    // and the callee loaded them back: the G2 accumulation had 4776 instead of 4304 SASS
    // instructions and MSM G2 2^24 took 454.5 instead of 369.6 ms on an H200.)
    __device__ __forceinline__ Field mul_call(const Field& b) const { return mul_by_value(*this, b); }
    static __device__ __noinline__ Field mul_by_value(const Field a, const Field b) { return a.mul_inline(b); }

    // One CIOS row of the alternating product (CUZK_MUL_ALT): E holds the even-aligned limbs of
    // the running value (E[k] at 2^32k), O the odd-aligned ones of the row before, not yet
    // shifted down (O[k] at 2^32(k-1) after that row's division by 2^32; O[0] is the row's
    // reduced zero). The row takes O's leftover O[1] into E[0], moves O down by two limbs while
    // adding a's odd limbs times bi into it (the shift rides on the multiply-adds), adds a's even
    // limbs times bi into E, and reduces with m = E[0]·INV. Afterwards O is the new odd-aligned
    // part (O[k] at 2^32(k+1)) and E[0] = 0: the next row runs with the roles swapped, so no row
    // merges the two accumulators (the last merge is after the final row). Bounds, with the
    // running value T < 2M (operands below M) or T < 3M (Fp, operands below 2M such as add_lazy
    // sums; 3M < 2^(32N)): E < T·2^32 fits N + 1 limbs; O < T fits N limbs, so O's chains never
    // carry out and O[N] stays 0.
    static __device__ __forceinline__ void alt_row(u32* E, u32* O, const u32* a, u32 bi) {
        E[0] = add_cc(E[0], O[1]);
        _Pragma("unroll") for (int j = 1; j < N; j += 2) {
            O[j - 1] = madc_lo_cc(a[j], bi, O[j + 1]);
            O[j] = madc_hi_cc(a[j], bi, j + 2 <= N ? O[j + 2] : 0u);
        }
        O[N] = 0;
        mac_even(E, a, bi);
        const u32 e0 = E[0];
        const u32 m = e0 * P::inv();
        if constexpr (M01_SPECIAL) {
            mac_m01(E, O, e0, m);
        } else {
            mac_even(E, P::M, m);
            mac_odd(O, P::M, m);  // no carry out (see the bounds above)
        }
    }

    // The Montgomery product with alternating accumulators (see alt_row): rows 0, 2, ... run on
    // (A, B), rows 1, 3, ... on (B, A); the result is B + A shifted down a limb.
    __device__ __forceinline__ Field mul_alt(const Field& b) const {
        static_assert(N % 2 == 0, "alternating rows need an even limb count");
        u32 A[N + 1], B[N + 1];
        _Pragma("unroll") for (int k = 0; k < N + 1; k++) { A[k] = 0; B[k] = 0; }
        _Pragma("unroll") for (int i = 0; i < N; i += 2) {
            alt_row(A, B, v, b.v[i]);
            alt_row(B, A, v, b.v[i + 1]);
        }
        u32 t[N];
        t[0] = add_cc(A[0], B[1]);
        _Pragma("unroll") for (int k = 1; k < N; k++) t[k] = addc_cc(A[k], B[k + 1]);
        const u32 top = addc(0, 0);
        Field r; reduce_once(r.v, t, top); return r;
    }

    __device__ __forceinline__ Field mul_inline(const Field& b) const {
        if constexpr (CUZK_MUL_ALT) return mul_alt(b);
        else return mul_split(b);
    }

    __device__ __forceinline__ Field mul_split(const Field& b) const {
        u32 e[N + 1], o[N + 1];
        _Pragma("unroll") for (int k = 0; k < N + 1; k++) { e[k] = 0; o[k] = 0; }
        _Pragma("unroll") for (int i = 0; i < N; i++) {
            mac_row(e, o, v, b.v[i]);
            reduce_row(e, o);
        }
        Field r; reduce_once(r.v, e, e[N]); return r;
    }

    __device__ __forceinline__ Field sqr() const {
        if constexpr (N == 12 && CUZK_FP_SQR) {
            u32 t[2 * N];
            sqr_wide(t, v);
            return redc_wide(t);
        } else {
            return (*this) * (*this);
        }
    }
    // t = a^2 as 2N limbs: each cross product a_i a_j (i < j) once, doubled, plus the squares.
    // Row i's cross products alternate between two accumulators (e at their own position, o one
    // limb down), so each chain pairs mad.lo/mad.hi on one operand pair and never adds twice to
    // a limb.
    static __device__ __forceinline__ void sqr_wide(u32* t, const u32* a) {
        u32 e[2 * N + 1], o[2 * N + 1];
        _Pragma("unroll") for (int k = 0; k < 2 * N + 1; k++) { e[k] = 0; o[k] = 0; }
        _Pragma("unroll") for (int i = 0; i < N - 1; i++) {
            const u32 ai = a[i];
            e[2 * i + 1] = mad_lo_cc(a[i + 1], ai, e[2 * i + 1]);
            e[2 * i + 2] = madc_hi_cc(a[i + 1], ai, e[2 * i + 2]);
            _Pragma("unroll") for (int j = i + 3; j < N; j += 2) {
                e[i + j] = madc_lo_cc(a[j], ai, e[i + j]);
                e[i + j + 1] = madc_hi_cc(a[j], ai, e[i + j + 1]);
            }
            // The carry goes just past the chain's last limb (the last cross product of this
            // parity is a_{N-1} or a_{N-2}); only a 0/1 carry of the row before can be there.
            const int je = (N - 1) - ((N - i - 2) & 1);
            e[i + je + 2] = addc(e[i + je + 2], 0);
            if (i + 2 < N) {
                o[2 * i + 1] = mad_lo_cc(a[i + 2], ai, o[2 * i + 1]);
                o[2 * i + 2] = madc_hi_cc(a[i + 2], ai, o[2 * i + 2]);
                _Pragma("unroll") for (int j = i + 4; j < N; j += 2) {
                    o[i + j - 1] = madc_lo_cc(a[j], ai, o[i + j - 1]);
                    o[i + j] = madc_hi_cc(a[j], ai, o[i + j]);
                }
                const int jo = (N - 1) - ((N - i - 3) & 1);
                o[i + jo + 1] = addc(o[i + jo + 1], 0);
            }
        }
        // cross = e + o * 2^32; t = 2 * cross + the squares a_i^2 at limbs (2i, 2i + 1).
        u32 c[2 * N];
        c[0] = e[0];
        c[1] = add_cc(e[1], o[0]);
        _Pragma("unroll") for (int k = 2; k < 2 * N; k++) c[k] = addc_cc(e[k], o[k - 1]);
        t[0] = c[0] << 1;
        _Pragma("unroll") for (int k = 1; k < 2 * N; k++) t[k] = (c[k] << 1) | (c[k - 1] >> 31);
        t[0] = mad_lo_cc(a[0], a[0], t[0]);
        t[1] = madc_hi_cc(a[0], a[0], t[1]);
        _Pragma("unroll") for (int i = 1; i < N; i++) {
            t[2 * i] = madc_lo_cc(a[i], a[i], t[2 * i]);
            t[2 * i + 1] = madc_hi_cc(a[i], a[i], t[2 * i + 1]);
        }
    }

    // Montgomery reduction of t < 2^(32N) * M (2N limbs): t * 2^(-32N) mod M, as a field element.
    static __device__ __forceinline__ Field redc_wide(const u32* t) {
        u32 e[N + 1], o[N + 1];
        _Pragma("unroll") for (int k = 0; k < N; k++) { e[k] = t[k]; o[k] = 0; }
        e[N] = 0;
        o[N] = 0;
        _Pragma("unroll") for (int i = 0; i < N; i++) {
            reduce_row(e, o);
            // Bring in the next limb of t at the top.
            e[N - 1] = add_cc(e[N - 1], t[N + i]);
            e[N] = addc(e[N], 0);
        }
        Field r;
        reduce_once(r.v, e, e[N]);
        return r;
    }

    __device__ __forceinline__ Field mul_fast(const Field& b) const { return (*this) * b; }
    __device__ __forceinline__ Field sqr_fast() const { return sqr(); }

    // Montgomery form -> canonical integer (multiply by the plain integer 1).
    __device__ __forceinline__ Field from_mont() const {
        Field one_raw;
        one_raw.v[0] = 1;
        _Pragma("unroll") for (int i = 1; i < N; i++) one_raw.v[i] = 0;
        return (*this) * one_raw;
    }

    // Load/store through plain u32 pointers: blst's u64 little-endian limbs are the same bytes.
    static __device__ __forceinline__ Field load(const u32* p) {
        Field r; _Pragma("unroll") for (int i = 0; i < N; i++) r.v[i] = p[i]; return r;
    }
    __device__ __forceinline__ void store(u32* p) const {
        _Pragma("unroll") for (int i = 0; i < N; i++) p[i] = v[i];
    }
};
