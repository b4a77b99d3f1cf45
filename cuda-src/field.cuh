// Montgomery arithmetic over a prime field in N 32-bit limbs (little-endian), generic over the
// parameter struct P (N, modulus M, ONE = R mod M, INV = -M^-1 mod 2^32). The in-memory layout is
// blst's: little-endian limbs in Montgomery form, so blstrs buffers are used as they are.
// Requires 2M < 2^(32N) (true for BLS12-381's Fr and Fp), so sums never overflow the top limb.
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

    // CIOS Montgomery product: a*b*R^-1 mod M. t has N+2 limbs; each row adds a*b[i] as a low
    // chain and a high chain, then m*M likewise, then shifts one limb down.
    __device__ __forceinline__ Field operator*(const Field& b) const {
        u32 t[N + 2];
        _Pragma("unroll") for (int i = 0; i < N + 2; i++) t[i] = 0;
        _Pragma("unroll") for (int i = 0; i < N; i++) {
            const u32 bi = b.v[i];
            t[0] = mad_lo_cc(v[0], bi, t[0]);
            _Pragma("unroll") for (int j = 1; j < N; j++) t[j] = madc_lo_cc(v[j], bi, t[j]);
            t[N] = addc_cc(t[N], 0);
            t[N + 1] = addc(t[N + 1], 0);
            t[1] = mad_hi_cc(v[0], bi, t[1]);
            _Pragma("unroll") for (int j = 1; j < N; j++) t[j + 1] = madc_hi_cc(v[j], bi, t[j + 1]);
            t[N + 1] = addc(t[N + 1], 0);

            const u32 m = t[0] * P::INV;
            t[0] = mad_lo_cc(m, P::M[0], t[0]);
            _Pragma("unroll") for (int j = 1; j < N; j++) t[j] = madc_lo_cc(m, P::M[j], t[j]);
            t[N] = addc_cc(t[N], 0);
            t[N + 1] = addc(t[N + 1], 0);
            t[1] = mad_hi_cc(m, P::M[0], t[1]);
            _Pragma("unroll") for (int j = 1; j < N; j++) t[j + 1] = madc_hi_cc(m, P::M[j], t[j + 1]);
            t[N + 1] = addc(t[N + 1], 0);

            _Pragma("unroll") for (int j = 0; j < N + 1; j++) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
        Field r; reduce_once(r.v, t, t[N]); return r;
    }

    __device__ __forceinline__ Field sqr() const { return (*this) * (*this); }

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
