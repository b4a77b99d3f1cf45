// Appended after shim.h, kernels_shim.h, the field and curve headers, cuda-src/msm.cu and
// cuda-src/batch_add.cu. Reads requests from stdin until EOF, each `u32 kind, u32 c, u64 n`, then:
// - kind 1 (G1) / 2 (G2), an MSM: `u32 per, nseg, bin_bits, windows, nsteps, stride` (stride:
//   the places of a window's sorted list, msm.rs `MsmPlan::stride`), the steps of
//   msm.rs `MsmPlan::steps_with` (3 words each), n affine bases and n scalars (Montgomery form);
//   runs the steps' kernels (the bucket-offset scans computed here) and writes each window's sum
//   as XYZZ, window 0 first;
// - kind 5: the G1 MSM with the lockstep accumulation kernel;
// - kind 3 (G1) / 4 (G2), a batch addition: `u32 per` (bitmap words per thread), n affine bases
//   and ceil(n/64) bitmap words; writes the XYZZ sum of the selected bases.

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

// The MSM's launches as msm.rs `MsmPlan::steps_with` lists them (tag, a, b each; see
// cuda_math_on_host.rs `msm_step_words`), on host buffers.
template <class F>
bool msm(u32 c, u64 n, bool lockstep) {
    typedef Xyzz<F> X;
    typedef Affine<F> A;
    const bool g1 = X::WORDS == 48;
    u32 head[6];
    if (fread(head, 4, 6, stdin) != 6) return false;
    const u32 per = head[0], nseg = head[1], bin_bits = head[2], W = head[3], nsteps = head[4];
    const u64 stride = head[5];
    std::vector<u32> steps(3ull * nsteps);
    if (fread(steps.data(), 4, steps.size(), stdin) != steps.size()) return false;
    const u32 B = 1u << (c - 1);
    std::vector<u32> bases(n * A::WORDS), scalars(n * 8);
    if (fread(bases.data(), 4, bases.size(), stdin) != bases.size()) return false;
    if (fread(scalars.data(), 4, scalars.size(), stdin) != scalars.size()) return false;

    const u64 tpw = (stride + per - 1) / per;
    std::vector<u32> counts((u64)W * B, 0), offsets((u64)W * B), cursor((u64)W * B), sorted((u64)W * stride + 1), bin_fill((u64)W * MSM_SORT_BINS, 0);
    std::vector<u64> records;
    std::vector<u32> buckets((u64)W * B * X::WORDS, 0), partials(W * tpw * X::WORDS, 0), segs((u64)W * nseg * X::WORDS);
    std::vector<u32> weights((u64)W * nseg * X::WORDS);
    for (u32 k = 0; k < nsteps; k++) {
        const u32 tag = steps[3 * k], a = steps[3 * k + 1], b = steps[3 * k + 2];
        switch (tag) {
            case 0:  // Histogram [a, b)
                launch(n, [&] { msm_histogram(scalars.data(), counts.data(), n, c, a, b); });
                break;
            case 1:  // Offsets (the device's scans, computed here: their warp shuffles are not emulated)
                for (u64 w = 0; w < W; w++) {
                    u32 run = 0;
                    for (u64 j = 0; j < B; j++) {
                        offsets[w * B + j] = cursor[w * B + j] = run;
                        run += counts[w * B + j];
                    }
                }
                break;
            case 2:  // Scatter [a, b)
                launch(n, [&] { msm_scatter(scalars.data(), cursor.data(), sorted.data(), n, stride, c, a, b); });
                break;
            case 3:  // ScatterTwoPass [a, b) (the coarse pass in blocks of 8 threads, its barriers real)
                records.resize((u64)(b - a) * stride);
                launch_blocks((n + 7) / 8, 8, [&] { msm_scatter_coarse(scalars.data(), offsets.data(), bin_fill.data(), records.data(), n, stride, c, a, b, bin_bits); });
                launch((u64)(b - a) * stride, [&] { msm_scatter_fine(records.data(), offsets.data(), counts.data(), cursor.data(), sorted.data(), stride, a, b, B); });
                break;
            case 4:  // Accumulate
                if (lockstep) {
                    // Whole blocks of CUZK_G1_LOCKSTEP_THREADS, as msm.rs launches them: the idle
                    // tail threads run too.
                    pacing_barriers = true;
                    const u64 bt = CUZK_G1_LOCKSTEP_THREADS;
                    launch((W * tpw + bt - 1) / bt * bt, [&] {
                        msm_accumulate_g1_lockstep(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), stride, W, B, per);
                    });
                    pacing_barriers = false;
                } else {
                    launch(W * tpw, [&] {
                        if (g1) msm_accumulate_g1(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), stride, W, B, per);
                        else msm_accumulate_g2(bases.data(), sorted.data(), offsets.data(), counts.data(), buckets.data(), partials.data(), stride, W, B, per);
                    });
                }
                break;
            case 5:  // FoldHeads, round a
                launch(W * tpw, [&] {
                    if (g1) msm_fold_heads_g1(offsets.data(), counts.data(), partials.data(), stride, W, B, per, a);
                    else msm_fold_heads_g2(offsets.data(), counts.data(), partials.data(), stride, W, B, per, a);
                });
                break;
            case 6:  // Fixup, folded = a
                launch(W * tpw, [&] {
                    if (g1) msm_fixup_g1(offsets.data(), counts.data(), buckets.data(), partials.data(), stride, W, B, per, a);
                    else msm_fixup_g2(offsets.data(), counts.data(), buckets.data(), partials.data(), stride, W, B, per, a);
                });
                break;
            case 7: {  // BucketReduce (no weights for one segment)
                u32* q = nseg > 1 ? weights.data() : nullptr;
                launch((u64)W * nseg, [&] {
                    if (g1) msm_bucket_reduce_g1(buckets.data(), segs.data(), q, W, B, nseg);
                    else msm_bucket_reduce_g2(buckets.data(), segs.data(), q, W, B, nseg);
                });
                break;
            }
            case 8: {  // PairRound over m = a terms
                const u32 m = a, mo = (m + 1) / 2;
                std::vector<u32> a2((u64)W * mo * X::WORDS), q2(mo > 1 ? (u64)W * mo * X::WORDS : 0);
                u32* q2p = mo > 1 ? q2.data() : nullptr;
                launch((u64)W * mo, [&] {
                    if (g1) msm_reduce_pairs_g1(segs.data(), weights.data(), a2.data(), q2p, W, m);
                    else msm_reduce_pairs_g2(segs.data(), weights.data(), a2.data(), q2p, W, m);
                });
                segs = a2;
                weights = q2;
                break;
            }
            default:
                return false;
        }
    }
    return fwrite(segs.data(), 4, (u64)W * X::WORDS, stdout) == (u64)W * X::WORDS;
}

int main() {
    u32 head[2];
    u64 n;
    while (fread(head, 4, 2, stdin) == 2 && fread(&n, 8, 1, stdin) == 1) {
        bool ok = false;
        u32 wpt = 0;
        switch (head[0]) {
            case 1: ok = msm<Fp>(head[1], n, false); break;
            case 2: ok = msm<Fp2>(head[1], n, false); break;
            case 5: ok = msm<Fp>(head[1], n, true); break;
            case 3: ok = fread(&wpt, 4, 1, stdin) == 1 && batch<Fp>(n, wpt); break;
            case 4: ok = fread(&wpt, 4, 1, stdin) == 1 && batch<Fp2>(n, wpt); break;
        }
        if (!ok) return 2;
    }
    fflush(stdout);
    return 0;
}
