// Appended after shim.h, kernels_shim.h, the field headers and cuda-src/ntt.cu. One request on
// stdin: `u32 log_n, u32 inverse, u32 launches`, then per launch (ntt.rs, `pass_launches`)
// `u32 kernel (0 ntt_pass, 1 ntt_pass_v2), u64 blocks, u32 threads, u32 smem, u32 b, t, lg_l,
// lg_s, dif`; then pows[k] = w^(2^k) (40 Fr) and the 2^log_n elements (Fr, Montgomery form).
// Builds the twiddle table with ntt_twiddles (one thread after another), runs the passes with
// every block's threads concurrent (launch_blocks) and writes the elements back.

// The kernels' dynamic shared memory (`extern __shared__`), one array reused by every block.
static const u64 SMEM_WORDS = 1 << 15;
u32 sm[SMEM_WORDS];
u32 ntt2_sm[SMEM_WORDS];

static bool read_u32(u32* v) { return fread(v, 4, 1, stdin) == 1; }

int main() {
    u32 log_n, inverse, count;
    if (!read_u32(&log_n) || !read_u32(&inverse) || !read_u32(&count)) return 1;
    struct L { u32 kernel; u64 blocks; u32 threads, smem, b, t, lg_l, lg_s, dif; };
    std::vector<L> ls(count);
    for (auto& l : ls) {
        if (!read_u32(&l.kernel) || fread(&l.blocks, 8, 1, stdin) != 1) return 1;
        u32* f[] = {&l.threads, &l.smem, &l.b, &l.t, &l.lg_l, &l.lg_s, &l.dif};
        for (u32* p : f) if (!read_u32(p)) return 1;
        if (l.smem > 4 * SMEM_WORDS) { fprintf(stderr, "shared memory of %u bytes exceeds the emulation's\n", l.smem); return 2; }
    }
    const u64 n = 1ull << log_n;
    std::vector<u32> pows(40 * 8), data(n * 8);
    if (fread(pows.data(), 4, pows.size(), stdin) != pows.size()) return 1;
    if (fread(data.data(), 4, data.size(), stdin) != data.size()) return 1;
    const u64 tw_count = log_n == 0 ? 1 : n / 2;
    std::vector<u32> tw(tw_count * 8);
    launch(tw_count, [&] { ntt_twiddles(tw.data(), pows.data(), tw_count); });
    for (const auto& l : ls) {
        if (l.kernel == 0)
            launch_blocks(l.blocks, l.threads, [&] { ntt_pass(data.data(), tw.data(), log_n, l.b, l.t, l.lg_l, l.dif, inverse); });
        else
            launch_blocks(l.blocks, l.threads, [&] { ntt_pass_v2(data.data(), tw.data(), log_n, l.b, l.t, l.lg_l, l.lg_s, l.dif, inverse); });
    }
    return fwrite(data.data(), 4, data.size(), stdout) == data.size() ? 0 : 1;
}
