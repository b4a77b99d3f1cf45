// Sequential host emulation of kernel launches, for kernels that use neither barriers nor warp
// shuffles (the MSM's histogram, scatter, accumulation, fix-up and bucket reduction): the driver
// runs one thread after another, setting blockIdx.x to the thread's index.
#include <cstdlib>

struct Dim3 { u32 x = 0, y = 0, z = 0; };
static Dim3 blockIdx, blockDim, threadIdx, gridDim;

#define __launch_bounds__(...)
#define __shared__ static

inline u32 atomicAdd(u32* p, u32 v) { u32 old = *p; *p = old + v; return old; }
inline u32 min(u32 a, u32 b) { return a < b ? a : b; }
inline u64 min(u64 a, u64 b) { return a < b ? a : b; }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
// Block-cooperative steps are not emulated: the driver computes the scans itself, and reaching
// one of these is a bug in the driver. The exception: barriers that only pace a block's warps
// (the lockstep accumulation), which the driver allows around that launch.
static bool pacing_barriers = false;
inline void __syncthreads() { if (!pacing_barriers) abort(); }
inline u32 __shfl_up_sync(u32, u32, u32) { abort(); }

template <class K>
void launch(u64 threads, K kernel) {
    blockDim.x = 1;
    threadIdx.x = 0;
    for (u64 i = 0; i < threads; i++) {
        blockIdx.x = (u32)i;
        kernel();
    }
}
