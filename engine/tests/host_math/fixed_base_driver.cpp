// Appended after shim.h, kernels_shim.h, the field and curve headers and cuda-src/fixed_base.cu.
// One request on stdin: u32 curve (1 = G1, 2 = G2), u64 n, the table (32 × 256 affine points in
// blst layout) and n canonical scalars (8 words each); runs fixed_base_g1 / _g2 one thread at a
// time and writes the n affine products (blst layout).

template <class F>
static int run(u64 n) {
    typedef Affine<F> A;
    std::vector<u32> table(32ull * 256 * A::WORDS), scalars(8 * n + 8), out(n * A::WORDS + 1);
    if (fread(table.data(), 4, table.size(), stdin) != table.size()) return 1;
    if (fread(scalars.data(), 32, n, stdin) != n) return 1;
    const bool g1 = A::WORDS == 24;
    launch(n, [&] {
        if (g1) fixed_base_g1(table.data(), scalars.data(), out.data(), n);
        else fixed_base_g2(table.data(), scalars.data(), out.data(), n);
    });
    return fwrite(out.data(), 4, n * A::WORDS, stdout) == n * A::WORDS ? 0 : 1;
}

int main() {
    u32 curve;
    u64 n;
    if (fread(&curve, 4, 1, stdin) != 1 || fread(&n, 8, 1, stdin) != 1) return 1;
    return curve == 1 ? run<Fp>(n) : curve == 2 ? run<Fp2>(n) : 1;
}
