// Appended after shim.h and the cuda-src headers. Reads requests from stdin until EOF, each
// `u32 kind, u32 op, u64 n` then n values of a and n values of b; writes n results to stdout.
// kind 0 Fr, 1 Fp, 2 Fp2: op 0 add, 1 sub, 2 mul, 3 sqr, 4 neg, 5 from_mont (Fr).
// kind 3 G1, 4 G2: a = XYZZ accumulators; op 0: a + affine b (mixed addition), 1: a + XYZZ b,
// 2: 2a, 3: 2 · affine b; results are XYZZ.
// kind 5 Fr through the FP64-pipe product (fr52.cuh): op 0: a·b, op 1: a·b^3 (products fed
// back unreduced); results in Fr's form.

template <class F>
F field_op(const F& x, const F& y, u32 op) {
    switch (op) {
        case 0: return x + y;
        case 1: return x - y;
        case 2: return x * y;
        case 3: return x.sqr();
        case 4: return x.neg();
        default: return x.from_mont();
    }
}

template <class F>
bool fields(u32 op, u64 n) {
    std::vector<u32> a(n * F::WORDS), b(n * F::WORDS), r(n * F::WORDS);
    if (fread(a.data(), 4, a.size(), stdin) != a.size() || fread(b.data(), 4, b.size(), stdin) != b.size()) return false;
    for (u64 i = 0; i < n; i++) field_op(F::load(&a[i * F::WORDS]), F::load(&b[i * F::WORDS]), op).store(&r[i * F::WORDS]);
    return fwrite(r.data(), 4, r.size(), stdout) == r.size();
}

template <>
Fp2 field_op<Fp2>(const Fp2& x, const Fp2& y, u32 op) {
    switch (op) {
        case 0: return x + y;
        case 1: return x - y;
        case 2: return x * y;
        case 3: return x.sqr();
        default: return x.neg();
    }
}

bool fr52(u32 op, u64 n) {
    std::vector<u32> a(n * 8), b(n * 8), r(n * 8);
    if (fread(a.data(), 4, a.size(), stdin) != a.size() || fread(b.data(), 4, b.size(), stdin) != b.size()) return false;
    for (u64 i = 0; i < n; i++) {
        const Fr52 y = Fr52::from_r260(Fr::load(&b[i * 8]));
        Fr52 x = Fr52::from(Fr::load(&a[i * 8])) * y;
        if (op == 1) x = (x * y) * y;
        x.to_fr().store(&r[i * 8]);
    }
    return fwrite(r.data(), 4, r.size(), stdout) == r.size();
}

template <class F>
bool points(u32 op, u64 n) {
    typedef Xyzz<F> X;
    typedef Affine<F> A;
    const u64 bw = op == 1 ? X::WORDS : A::WORDS;
    std::vector<u32> a(n * X::WORDS), b(n * bw), r(n * X::WORDS);
    if (fread(a.data(), 4, a.size(), stdin) != a.size() || fread(b.data(), 4, b.size(), stdin) != b.size()) return false;
    for (u64 i = 0; i < n; i++) {
        X acc = X::load(&a[i * X::WORDS]), out;
        switch (op) {
            case 0: out = acc.add_affine_inline(A::load(&b[i * bw])); break;
            case 1: out = acc.add(X::load(&b[i * bw])); break;
            case 2: out = acc.dbl(); break;
            default: out = X::dbl_affine(A::load(&b[i * bw])); break;
        }
        out.store(&r[i * X::WORDS]);
    }
    return fwrite(r.data(), 4, r.size(), stdout) == r.size();
}

int main() {
    u32 head[2];
    u64 n;
    while (fread(head, 4, 2, stdin) == 2 && fread(&n, 8, 1, stdin) == 1) {
        bool ok = false;
        switch (head[0]) {
            case 0: ok = fields<Fr>(head[1], n); break;
            case 1: ok = fields<Fp>(head[1], n); break;
            case 2: ok = fields<Fp2>(head[1], n); break;
            case 3: ok = points<Fp>(head[1], n); break;
            case 4: ok = points<Fp2>(head[1], n); break;
            case 5: ok = fr52(head[1], n); break;
        }
        if (!ok) return 2;
    }
    fflush(stdout);
    return 0;
}
