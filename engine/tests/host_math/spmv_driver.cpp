// Appended after shim.h, kernels_shim.h, field.cuh, fr.cuh and cuda-src/spmv.cu. One request on
// stdin: u64 rows, cols, nnz, table; then the row pointers (rows + 1 u64), the entries (nnz u64),
// the table (Fr) and the witness w (cols Fr). Runs spmv_rows one thread after another (as
// `grid(rows, 256)` launches it) and writes the rows' values (Fr) to stdout.

int main() {
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
