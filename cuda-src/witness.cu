// A recorded witness unpacked on the device from its packed upload (engine/src/packed_witness.rs,
// whose `PackedWitness::unpack` is this kernel's host model): element i is one where bit i % 64
// of ones[i / 64] is set; where bit i % 64 of others[i / 64] is set, the next of the others'
// values (ranks[i / 64] of them before its word, then those below its bit); zero elsewhere. One
// thread an element.

extern "C" __global__ void unpack_witness(u32* w, const u64* ones, const u64* others, const u32* ranks, const u32* values, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u64 word = i / 64, bit = i % 64;
    if ((ones[word] >> bit) & 1) {
        Fr::one().store(w + 8 * i);
        return;
    }
    const u64 o = others[word];
    if ((o >> bit) & 1) {
        const u64 below = o & ((1ull << bit) - 1);
        const u64 r = (u64)ranks[word] + (u64)__popcll(below);
        Fr::load(values + 8 * r).store(w + 8 * i);
    } else {
        Fr::zero().store(w + 8 * i);
    }
}
