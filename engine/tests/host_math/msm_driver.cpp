// Appended after shim.h, kernels_shim.h, the field and curve headers, cuda-src/msm.cu and
// cuda-src/batch_add.cu. Reads requests from stdin until EOF, each `u32 kind, u32 c, u64 n,
// u32 per, u32 nseg, u32 bin_bits, u32 two_pass` (msm.rs `sort_bin_bits`, `two_pass_sort`):
// - kind 1 (G1) / 2 (G2), an MSM: n affine bases and n scalars (Montgomery form) follow; runs the
//   MSM's kernels one thread at a time (the bucket-offset scans computed here, the segment sums
//   reduced in pair rounds as msm.rs does) and writes each window's sum as XYZZ, window 0 first;
// - kind 5: the G1 MSM with the lockstep accumulation kernel and the serial fix-up;
// - kind 3 (G1) / 4 (G2), a batch addition: n affine bases and ceil(n/64) bitmap words follow
//   (`per` = bitmap words per thread); writes the XYZZ sum of the selected bases.

// fold.rs: `groups` groups of `per_group` XYZZ points each become one point per group, in rounds
// of at most 32 additions per thread.
template <class F>
std::vector<u32> fold(std::vector<u32> cur, u64 groups, u64 per) {
    typedef Xyzz<F> X;
    const bool g1 = X::WORDS == 48;
    while (per > 1) {
        const u64 k = per < 32 ? per : 32;
        const u64 count = groups * per, next = (per + k - 1) / k;
        std::vector<u32> out(groups * next * X::WORDS);
        const u32 k32 = (u32)k;
        launch(groups * next, [&] {
            if (g1) reduce_sum_g1(cur.data(), out.data(), count, k32);
            else reduce_sum_g2(cur.data(), out.data(), count, k32);
        });
        cur = out;
        per = next;
    }
    return cur;
}

template <class F>
bool batch(u64 n, u32 wpt) {
    typedef Xyzz<F> X;
    typedef Affine<F> A;
    const bool g1 = X::WORDS == 48;
    const u64 nwords = (n + 63) / 64;
    std::vector<u32> bases(n * A::WORDS);
    std::vector<u64> bits(nwords);
    if (fread(bases.data(), 4, bases.size(), stdin) != bases.size()) return false;
    if (fread(bits.data(), 8, bits.size(), stdin) != bits.size()) return false;
    const u64 threads = (nwords + wpt - 1) / wpt;
    std::vector<u32> partials(threads * X::WORDS);
    launch(threads, [&] {
        if (g1) batch_add_g1(bases.data(), bits.data(), partials.data(), n, wpt);
        else batch_add_g2(bases.data(), bits.data(), partials.data(), n, wpt);
    });
    std::vector<u32> sum = fold<F>(partials, 1, threads);
    return fwrite(sum.data(), 4, X::WORDS, stdout) == (size_t)X::WORDS;
}

template <class F>
bool msm(u32 c, u64 n, u32 per, u32 nseg, u32 bin_bits, bool two_pass, bool lockstep) {
    typedef Xyzz<F> X;
    typedef Affine<F> A;
    const bool g1 = X::WORDS == 48;
    const u32 W = (256 + c - 1) / c, B = 1u << (c - 1);
    std::vector<u32> bases(n * A::WORDS), scalars(n * 8);
    if (fread(bases.data(), 4, bases.size(), stdin) != bases.size()) return false;
    if (fread(scalars.data(), 4, scalars.size(), stdin) != scalars.size()) return false;

    std::vector<u32> counts((u64)W * B, 0), offsets((u64)W * B), cursor((u64)W * B), sorted((u64)W * n + 1);
    // In groups of two windows (msm.rs groups them by L2 size), which covers the grouping.
    for (u32 w0 = 0; w0 < W; w0 += 2) launch(n, [&] { msm_histogram(scalars.data(), counts.data(), n, c, w0, w0 + 2 < W ? w0 + 2 : W); });
    // The bucket offsets (msm.rs: msm_tile_sums, msm_scan, msm_tile_scan).
    for (u64 w = 0; w < W; w++) {
        u32 run = 0;
        for (u64 b = 0; b < B; b++) {
            offsets[w * B + b] = cursor[w * B + b] = run;
            run += counts[w * B + b];
        }
    }
    // The scatter: in one pass, or in two (`two_pass`; the coarse one in blocks of 8 threads, its
    // barriers real).
    std::vector<u32> bin_fill((u64)W * 32, 0);
    std::vector<u64> records(2 * n);
    for (u32 w0 = 0; w0 < W; w0 += 2) {
        const u32 w1 = w0 + 2 < W ? w0 + 2 : W;
        if (!two_pass) {
            launch(n, [&] { msm_scatter(scalars.data(), cursor.data(), sorted.data(), n, c, w0, w1); });
            continue;
        }
        launch_blocks((n + 7) / 8, 8, [&] { msm_scatter_coarse(scalars.data(), offsets.data(), bin_fill.data(), records.data(), n, c, w0, w1, bin_bits); });
        launch((u64)(w1 - w0) * n, [&] { msm_scatter_fine(records.data(), offsets.data(), counts.data(), cursor.data(), sorted.data(), n, w0, w1, B); });
    }
    const u64 tpw = (n + per - 1) / per;
    std::vector<u32> buckets((u64)W * B * X::WORDS, 0), partials(W * tpw * X::WORDS, 0), segs((u64)W * nseg * X::WORDS);
    if (lockstep) {
        // Whole blocks of CUZK_G1_LOCKSTEP_THREADS, as msm.rs launches them: the idle tail
        // threads run too.
        pacing_barriers = true;
        const u64 bt = CUZK_G1_LOCKSTEP_THREADS;
        launch((W * tpw + bt - 1) / bt * bt, [&] {
            msm_accumulate_g1_lockstep(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
        });
        pacing_barriers = false;
    } else {
        launch(W * tpw, [&] {
            if (g1) msm_accumulate_g1(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
            else msm_accumulate_g2(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per);
        });
    }
    // msm.rs: the head partials folded in a tree, then the fix-up adds one (the lockstep kind
    // takes the serial fix-up instead, so both stay covered).
    const u32 folded = lockstep ? 0 : 1;
    u32 rounds = 0;
    while (folded && (1ull << rounds) < tpw) rounds++;
    for (u32 r = 0; r < rounds; r++) launch(W * tpw, [&] {
        if (g1) msm_fold_heads_g1(offsets.data(), counts.data(), partials.data(), n, W, B, per, r);
        else msm_fold_heads_g2(offsets.data(), counts.data(), partials.data(), n, W, B, per, r);
    });
    launch(W * tpw, [&] {
        if (g1) msm_fixup_g1(offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per, folded);
        else msm_fixup_g2(offsets.data(), counts.data(), buckets.data(), partials.data(), n, W, B, per, folded);
    });
    // msm.rs: the segment sums and weights (no weights for one segment), then the pair rounds.
    std::vector<u32> weights((u64)W * nseg * X::WORDS);
    u32* q = nseg > 1 ? weights.data() : nullptr;
    launch((u64)W * nseg, [&] {
        if (g1) msm_bucket_reduce_g1(buckets.data(), segs.data(), q, W, B, nseg);
        else msm_bucket_reduce_g2(buckets.data(), segs.data(), q, W, B, nseg);
    });
    for (u32 m = nseg; m > 1; m = (m + 1) / 2) {
        const u32 mo = (m + 1) / 2;
        std::vector<u32> a2((u64)W * mo * X::WORDS), q2(mo > 1 ? (u64)W * mo * X::WORDS : 0);
        u32* q2p = mo > 1 ? q2.data() : nullptr;
        launch((u64)W * mo, [&] {
            if (g1) msm_reduce_pairs_g1(segs.data(), weights.data(), a2.data(), q2p, W, m);
            else msm_reduce_pairs_g2(segs.data(), weights.data(), a2.data(), q2p, W, m);
        });
        segs = a2;
        weights = q2;
    }
    return fwrite(segs.data(), 4, (u64)W * X::WORDS, stdout) == (u64)W * X::WORDS;
}

int main() {
    u32 head[2], tail[4];
    u64 n;
    while (fread(head, 4, 2, stdin) == 2 && fread(&n, 8, 1, stdin) == 1 && fread(tail, 4, 4, stdin) == 4) {
        bool ok = false;
        switch (head[0]) {
            case 1: ok = msm<Fp>(head[1], n, tail[0], tail[1], tail[2], tail[3] != 0, false); break;
            case 2: ok = msm<Fp2>(head[1], n, tail[0], tail[1], tail[2], tail[3] != 0, false); break;
            case 5: ok = msm<Fp>(head[1], n, tail[0], tail[1], tail[2], tail[3] != 0, true); break;
            case 3: ok = batch<Fp>(n, tail[0]); break;
            case 4: ok = batch<Fp2>(n, tail[0]); break;
        }
        if (!ok) return 2;
    }
    fflush(stdout);
    return 0;
}
