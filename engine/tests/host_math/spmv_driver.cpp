// Appended after shim.h, kernels_shim.h, field.cuh, fr.cuh, cuda-src/spmv.cu, split.cu and witness.cu. One request on
// stdin, u64 words first, kernels run one thread after another (as `grid(rows, 256)` launches):
//   mode 0, products: u64 rows, cols, nnz, table; the row pointers (rows + 1 u64), the entries
//     (nnz u64), the table (Fr) and the witness w (cols Fr) → spmv_rows → the rows' values (Fr);
//   mode 1, row check: u64 rows; a, b, c (rows Fr each) → spmv_unsatisfied → u64 first bad row
//     (rows when none);
//   mode 2, split: u64 cols, n, has_idx, base; the indices (n u32, if has_idx) and the witness
//     (cols Fr) → split_gather (one thread a 64-output word) → tail (n Fr), then ones (⌈n/64⌉ u64), then the nonzero tail count (u64);
//   mode 3, unpack: u64 n, values; ones and others (⌈n/64⌉ u64 each), ranks (⌈n/64⌉ u32) and the
//     values (Fr) → unpack_witness (one thread an element) → the witness (n Fr).

static int products() {
    u64 hdr[4];
    if (fread(hdr, 8, 4, stdin) != 4) return 1;
    const u64 rows = hdr[0], cols = hdr[1], nnz = hdr[2], tl = hdr[3];
    std::vector<u64> ptr(rows + 1), ent(nnz);
    std::vector<u32> table(8 * tl + 8), w(8 * cols + 8), out(8 * rows + 8);
    if (fread(ptr.data(), 8, rows + 1, stdin) != rows + 1 || fread(ent.data(), 8, nnz, stdin) != nnz) return 1;
    if (fread(table.data(), 32, tl, stdin) != tl || fread(w.data(), 32, cols, stdin) != cols) return 1;
    launch(rows, [&] { spmv_rows(out.data(), ptr.data(), ent.data(), table.data(), w.data(), rows); });
    return fwrite(out.data(), 32, rows, stdout) == rows ? 0 : 1;
}

static int check() {
    u64 rows;
    if (fread(&rows, 8, 1, stdin) != 1) return 1;
    std::vector<u32> v[3];
    for (auto& x : v) {
        x.resize(8 * rows + 8);
        if (fread(x.data(), 32, rows, stdin) != rows) return 1;
    }
    unsigned long long first = rows;
    launch(rows, [&] { spmv_unsatisfied(&first, v[0].data(), v[1].data(), v[2].data(), rows); });
    const u64 out = first;
    return fwrite(&out, 8, 1, stdout) == 1 ? 0 : 1;
}

static int split() {
    u64 hdr[4];
    if (fread(hdr, 8, 4, stdin) != 4) return 1;
    const u64 cols = hdr[0], n = hdr[1], has_idx = hdr[2], base = hdr[3];
    std::vector<u32> idx(n + 1), w(8 * cols + 8), tail(8 * n + 8);
    const u64 words = (n + 63) / 64;
    std::vector<u64> ones(words + 1, ~0ull);  // every word must be written whole
    if (has_idx && fread(idx.data(), 4, n, stdin) != n) return 1;
    if (fread(w.data(), 32, cols, stdin) != cols) return 1;
    u32 live = 0;
    launch(words, [&] { split_gather(tail.data(), ones.data(), &live, w.data(), has_idx ? idx.data() : nullptr, base, n); });
    if (fwrite(tail.data(), 32, n, stdout) != n) return 1;
    if (fwrite(ones.data(), 8, words, stdout) != words) return 1;
    const u64 count = live;
    return fwrite(&count, 8, 1, stdout) == 1 ? 0 : 1;
}

static int unpack() {
    u64 hdr[2];
    if (fread(hdr, 8, 2, stdin) != 2) return 1;
    const u64 n = hdr[0], nv = hdr[1], words = (n + 63) / 64;
    std::vector<u64> ones(words + 1), others(words + 1);
    std::vector<u32> ranks(words + 1), values(8 * nv + 8), w(8 * n + 8, 0xdeadbeef);
    if (fread(ones.data(), 8, words, stdin) != words || fread(others.data(), 8, words, stdin) != words) return 1;
    if (fread(ranks.data(), 4, words, stdin) != words || fread(values.data(), 32, nv, stdin) != nv) return 1;
    launch(n, [&] { unpack_witness(w.data(), ones.data(), others.data(), ranks.data(), values.data(), n); });
    return fwrite(w.data(), 32, n, stdout) == n ? 0 : 1;
}

int main() {
    u64 mode;
    if (fread(&mode, 8, 1, stdin) != 1) return 1;
    return mode == 0 ? products() : mode == 1 ? check() : mode == 2 ? split() : mode == 3 ? unpack() : 1;
}
