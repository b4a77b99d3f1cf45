// Appended after shim.h, kernels_shim.h, the field headers, cuda-src/bitrev.cuh, ntt.cu and h.cu.
// One request on stdin runs a list of launches over three buffers A, B, C of 2^log_n Fr
// (Montgomery form) and writes the three buffers back. The request:
//   u32 log_n, u32 ops, then each op: u32 code and its u32 fields
//     0 pass:     kernel (0 ntt_pass, 1 ntt_pass_v2), blocks, threads, smem, b, t, lg_l, lg_s,
//                 dif, inverse, buffer, out buffer (3: none, in place)   (ntt.rs `pass_launches`)
//     1 scale:    out, input, table (0 to-coset, 1 from-coset), rev_in, out_perm (h.rs)
//     2 product:  A = A·B
//     3 finish:   B[bitrev p] = A[p]·from-coset table − C[p]·kappa (h_finish)
//   then pows[k] = w^(2^k) (40 Fr), u32 lo_bits, the to-coset lo and hi tables, the from-coset
//   lo and hi tables, kappa (1 Fr), and A, B, C.
// The twiddle table comes from ntt_twiddles (one thread after another), the passes run with every
// block's threads concurrent (launch_blocks), the element-wise kernels one thread after another.

// The kernels' dynamic shared memory (`extern __shared__`), one array reused by every block.
static const u64 SMEM_WORDS = 1 << 15;
u32 sm[SMEM_WORDS];
u32 ntt2_sm[SMEM_WORDS];

static bool read_u32(u32* v) { return fread(v, 4, 1, stdin) == 1; }
static bool read_fr(std::vector<u32>& v, u64 count) {
    v.resize(count * 8);
    return fread(v.data(), 4, v.size(), stdin) == v.size();
}

int main() {
    u32 log_n, count;
    if (!read_u32(&log_n) || !read_u32(&count)) return 1;
    std::vector<std::vector<u32>> ops(count);
    for (auto& op : ops) {
        u32 code;
        if (!read_u32(&code)) return 1;
        const u32 fields = code == 0 ? 12 : code == 1 ? 5 : 0;
        op.resize(1 + fields);
        op[0] = code;
        for (u32 i = 1; i <= fields; i++) if (!read_u32(&op[i])) return 1;
        if (code == 0 && op[4] > 4 * SMEM_WORDS) { fprintf(stderr, "shared memory of %u bytes exceeds the emulation's\n", op[4]); return 2; }
    }
    const u64 n = 1ull << log_n;
    u32 lo_bits;
    std::vector<u32> pows, to_lo, to_hi, from_lo, from_hi, kappa, buf[3];
    if (!read_fr(pows, 40) || !read_u32(&lo_bits)) return 1;
    const u64 lo_len = 1ull << lo_bits, hi_len = n >> lo_bits;
    if (!read_fr(to_lo, lo_len) || !read_fr(to_hi, hi_len) || !read_fr(from_lo, lo_len) || !read_fr(from_hi, hi_len)) return 1;
    if (!read_fr(kappa, 1) || !read_fr(buf[0], n) || !read_fr(buf[1], n) || !read_fr(buf[2], n)) return 1;
    const u64 tw_count = log_n == 0 ? 1 : n / 2;
    std::vector<u32> tw(tw_count * 8);
    launch(tw_count, [&] { ntt_twiddles(tw.data(), pows.data(), tw_count); });
    for (const auto& op : ops) {
        if (op[0] == 0) {
            const u64 blocks = op[2];
            const u32 kernel = op[1], threads = op[3], b = op[5], t = op[6], lg_l = op[7], lg_s = op[8], dif = op[9], inv = op[10];
            u32* x = buf[op[11]].data();
            u32* out = op[12] < 3 ? buf[op[12]].data() : nullptr;
            if (kernel == 0) launch_blocks(blocks, threads, [&] { ntt_pass(x, out, tw.data(), log_n, b, t, lg_l, dif, inv); });
            else launch_blocks(blocks, threads, [&] { ntt_pass_v2(x, out, tw.data(), log_n, b, t, lg_l, lg_s, dif, inv); });
        } else if (op[0] == 1) {
            const bool to = op[3] == 0;
            const u32* lo = (to ? to_lo : from_lo).data();
            const u32* hi = (to ? to_hi : from_hi).data();
            u32* out = buf[op[1]].data();
            const u32* in = buf[op[2]].data();
            const u32 rev = op[4], perm = op[5];
            // blockIdx.x * blockDim.x + threadIdx.x = the element, as `grid(n, 256)` launches it.
            launch(n, [&] { scale_permute(out, in, lo, hi, lo_bits, log_n, rev, perm); });
        } else if (op[0] == 2) {
            launch(n, [&] { h_product(buf[0].data(), buf[1].data(), n); });
        } else {
            launch(n, [&] { h_finish(buf[1].data(), buf[0].data(), buf[2].data(), from_lo.data(), from_hi.data(), kappa.data(), lo_bits, log_n); });
        }
    }
    for (auto& b : buf) if (fwrite(b.data(), 4, b.size(), stdout) != b.size()) return 1;
    return 0;
}
