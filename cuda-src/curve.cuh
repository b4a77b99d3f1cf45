// Short-Weierstrass points with a = 0 over a field F (Fp for G1, Fp2 for G2).
// Inputs are blst affine points (x, y; all zeros = infinity). Accumulators are XYZZ
// (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2; ZZ = 0 means infinity), formulas from the EFD
// (madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the equal and opposite cases.
template <class F>
struct Affine {
    F x, y;
    static constexpr int WORDS = 2 * F::WORDS;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    static __device__ __forceinline__ Affine load(const u32* p) { Affine r; r.x = F::load(p); r.y = F::load(p + F::WORDS); return r; }
    __device__ __forceinline__ Affine neg() const { Affine r; r.x = x; r.y = y.neg(); return r; }
};

template <class F>
struct Xyzz {
    F x, y, zz, zzz;
    static constexpr int WORDS = 4 * F::WORDS;

    static __device__ __forceinline__ Xyzz inf() { Xyzz r; r.x = F::zero(); r.y = F::zero(); r.zz = F::zero(); r.zzz = F::zero(); return r; }
    __device__ __forceinline__ bool is_inf() const { return zz.is_zero(); }
    static __device__ __forceinline__ Xyzz from_affine(const Affine<F>& a) {
        if (a.is_inf()) return inf();
        Xyzz r; r.x = a.x; r.y = a.y; r.zz = F::one(); r.zzz = F::one(); return r;
    }
    static __device__ __forceinline__ Xyzz load(const u32* p) {
        Xyzz r; r.x = F::load(p); r.y = F::load(p + F::WORDS); r.zz = F::load(p + 2 * F::WORDS); r.zzz = F::load(p + 3 * F::WORDS); return r;
    }
    __device__ __forceinline__ void store(u32* p) const {
        x.store(p); y.store(p + F::WORDS); zz.store(p + 2 * F::WORDS); zzz.store(p + 3 * F::WORDS);
    }

    // 2 * affine point (mdbl-2008-s-1).
    static __device__ __noinline__ Xyzz dbl_affine(const Affine<F>& a) {
        if (a.y.is_zero()) return inf();
        F u = a.y.dbl();
        F v = u.sqr();
        F w = u * v;
        F s = a.x * v;
        F x2 = a.x.sqr();
        F m = x2.dbl() + x2;
        Xyzz r;
        r.x = m.sqr() - s.dbl();
        r.y = m * (s - r.x) - w * a.y;
        r.zz = v;
        r.zzz = w;
        return r;
    }

    // 2 * this (dbl-2008-s-1).
    __device__ __noinline__ Xyzz dbl() const {
        if (is_inf() || y.is_zero()) return inf();
        F u = y.dbl();
        F v = u.sqr();
        F w = u * v;
        F s = x * v;
        F x2 = x.sqr();
        F m = x2.dbl() + x2;
        Xyzz r;
        r.x = m.sqr() - s.dbl();
        r.y = m * (s - r.x) - w * y;
        r.zz = v * zz;
        r.zzz = w * zzz;
        return r;
    }

    // this + affine (madd-2008-s). add_affine is a call (small code, fast compiles, used for
    // G2); add_affine_inline is expanded in place (used by the G1 inner loops).
    __device__ __noinline__ Xyzz add_affine(const Affine<F>& a) const { return add_affine_inline(a); }
    __device__ __forceinline__ Xyzz add_affine_inline(const Affine<F>& a) const {
        if (a.is_inf()) return *this;
        if (is_inf()) return from_affine(a);
        F u2 = a.x * zz;
        F s2 = a.y * zzz;
        F p = u2 - x;
        F r = s2 - y;
        if (p.is_zero()) {
            if (r.is_zero()) return dbl_affine(a);
            return inf();
        }
        F pp = p.sqr();
        F ppp = p * pp;
        F q = x * pp;
        Xyzz o;
        o.x = r.sqr() - ppp - q.dbl();
        o.y = r * (q - o.x) - y * ppp;
        o.zz = zz * pp;
        o.zzz = zzz * ppp;
        return o;
    }

    // this + other (add-2008-s).
    __device__ __noinline__ Xyzz add(const Xyzz& b) const {
        if (b.is_inf()) return *this;
        if (is_inf()) return b;
        F u1 = x * b.zz;
        F u2 = b.x * zz;
        F s1 = y * b.zzz;
        F s2 = b.y * zzz;
        F p = u2 - u1;
        F r = s2 - s1;
        if (p.is_zero()) {
            if (r.is_zero()) return dbl();
            return inf();
        }
        F pp = p.sqr();
        F ppp = p * pp;
        F q = u1 * pp;
        Xyzz o;
        o.x = r.sqr() - ppp - q.dbl();
        o.y = r * (q - o.x) - s1 * ppp;
        o.zz = zz * b.zz * pp;
        o.zzz = zzz * b.zzz * ppp;
        return o;
    }
};

typedef Affine<Fp> G1A;
typedef Xyzz<Fp> G1X;
typedef Affine<Fp2> G2A;
typedef Xyzz<Fp2> G2X;
