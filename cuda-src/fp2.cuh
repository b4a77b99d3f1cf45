// Fp2 = Fp[u]/(u^2 + 1), laid out as blst's blst_fp2: c0 then c1.
struct Fp2 {
    Fp c0, c1;
    static constexpr int WORDS = 2 * Fp::N;

    static __device__ __forceinline__ Fp2 zero() { Fp2 r; r.c0 = Fp::zero(); r.c1 = Fp::zero(); return r; }
    static __device__ __forceinline__ Fp2 one() { Fp2 r; r.c0 = Fp::one(); r.c1 = Fp::zero(); return r; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ Fp2 operator+(const Fp2& b) const { Fp2 r; r.c0 = c0 + b.c0; r.c1 = c1 + b.c1; return r; }
    __device__ __forceinline__ Fp2 operator-(const Fp2& b) const { Fp2 r; r.c0 = c0 - b.c0; r.c1 = c1 - b.c1; return r; }
    __device__ __forceinline__ Fp2 neg() const { Fp2 r; r.c0 = c0.neg(); r.c1 = c1.neg(); return r; }
    __device__ __forceinline__ Fp2 dbl() const { return *this + *this; }

    // One Fp product of the Fp2 operations: a call (the G2 kernels are large enough that inline
    // Fp products cost more in instruction fetch than the calls do: 8% on a 2^24 G2 MSM on an
    // H200; expanding them inside the Fp2 calls instead was 6 % slower, docs/BENCHMARKS.md).
    static __device__ __forceinline__ Fp mul1(const Fp& a, const Fp& b) { return a.mul_call(b); }

    // Karatsuba: three Fp products; the sums c0 + c1 and b0 + b1 go in unreduced (below 2p, see
    // Field::add_lazy).
    __device__ __noinline__ Fp2 operator*(const Fp2& b) const {
        Fp2 r;
        Fp t0 = mul1(c0, b.c0);
        Fp t1 = mul1(c1, b.c1);
        Fp t2 = mul1(c0.add_lazy(c1), b.c0.add_lazy(b.c1));
        r.c0 = t0 - t1;
        r.c1 = t2 - t0 - t1;
        return r;
    }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two Fp products.
    __device__ __noinline__ Fp2 sqr() const {
        Fp2 r; r.c0 = mul1(c0.add_lazy(c1), c0 - c1); Fp t = mul1(c0, c1); r.c1 = t + t; return r;
    }
    static __device__ __forceinline__ Fp2 load(const u32* p) { Fp2 r; r.c0 = Fp::load(p); r.c1 = Fp::load(p + Fp::N); return r; }
    __device__ __forceinline__ void store(u32* p) const { c0.store(p); c1.store(p + Fp::N); }
};
