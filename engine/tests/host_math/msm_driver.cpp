// Appended after shim.h, kernels_shim.h, the field and curve headers and cuda-src/msm.cu. Reads
// MSM requests from stdin until EOF: `u32 curve (1 = G1, 2 = G2), u32 c, u64 n, u32 per,
// u32 nseg`, then n affine bases and n scalars (Montgomery form); runs the MSM's kernels one
// thread at a time (the bucket-offset scans and the final fold computed here) and writes each
// window's sum as XYZZ, window 0 first.

template <class F>
bool msm(u32 c, u64 n, u32 per, u32 nseg) {
    typedef Xyzz<F> X;
    typedef Affine<F> A;
    const bool g1 = X::WORDS == 48;
    const u32 W = (256 + c - 1) / c, B = 1u << (c - 1);
    std::vector<u32> bases(n * A::WORDS), scalars(n * 8);
    if (fread(bases.data(), 4, bases.size(), stdin) != bases.size()) return false;
    if (fread(scalars.data(), 4, scalars.size(), stdin) != scalars.size()) return false;

    std::vector<u32> counts((u64)W * B, 0), offsets((u64)W * B), cursor((u64)W * B), sorted((u64)W * n + 1);
    launch(n, [&] { msm_histogram(scalars.data(), counts.data(), n, c, W); });
    for (u64 w = 0; w < W; w++) {
        u32 run = 0;
        for (u64 b = 0; b < B; b++) {
            offsets[w * B + b] = cursor[w * B + b] = run;
            run += counts[w * B + b];
        }
    }
    launch(n, [&] { msm_scatter(scalars.data(), cursor.data(), sorted.data(), n, c, W); });

    const u64 tpw = (n + per - 1) / per;
    std::vector<u32> buckets((u64)W * B * X::WORDS, 0), partials(W * tpw * X::WORDS, 0), segs((u64)W * nseg * X::WORDS);
    launch(W * tpw, [&] {
        if (g1) msm_accumulate_g1(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
        else msm_accumulate_g2(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
    });
    launch(W * tpw, [&] {
        if (g1) msm_fixup_g1(offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
        else msm_fixup_g2(offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
    });
    launch((u64)W * nseg, [&] {
        if (g1) msm_bucket_reduce_g1(buckets.data(), segs.data(), W, B, nseg);
        else msm_bucket_reduce_g2(buckets.data(), segs.data(), W, B, nseg);
    });
    std::vector<u32> out((u64)W * X::WORDS);
    for (u64 w = 0; w < W; w++) {
        X acc = X::inf();
        for (u64 s = 0; s < nseg; s++) acc = acc.add(X::load(&segs[(w * nseg + s) * X::WORDS]));
        acc.store(&out[w * X::WORDS]);
    }
    return fwrite(out.data(), 4, out.size(), stdout) == out.size();
}

int main() {
    u32 head[2], tail[2];
    u64 n;
    while (fread(head, 4, 2, stdin) == 2 && fread(&n, 8, 1, stdin) == 1 && fread(tail, 4, 2, stdin) == 2) {
        bool ok = head[0] == 1 ? msm<Fp>(head[1], n, tail[0], tail[1]) : msm<Fp2>(head[1], n, tail[0], tail[1]);
        if (!ok) return 2;
    }
    fflush(stdout);
    return 0;
}
