// The low `bits` bits of an element index in reverse order (the NTT's bit-reversed layout):
// shared by the natural-order NTT pass (ntt.cu) and the H step's permutations (h.cu).
__device__ __forceinline__ u64 bitrev(u64 i, u32 bits) { return bits == 0 ? 0 : (__brevll(i) >> (64 - bits)); }
