// Host emulation of kernel launches.
// - `launch`: one thread after another (blockIdx.x = the thread's index), for kernels that use
//   neither barriers nor warp shuffles (the MSM's histogram, scatter, accumulation, fix-up and
//   bucket reduction, batch addition).
// - `launch_blocks`: the blocks one after another, each block's threads as concurrent host
//   threads meeting at every __syncthreads, its shared memory the kernel's `extern __shared__`
//   array (one, reused by every block) or a function-local static: for the NTT pass kernels.
// (<thread>, <mutex> and <condition_variable> come with shim.h, before its attribute macros.)
#include <cstdlib>

struct Dim3 { u32 x = 0, y = 0, z = 0; };
static thread_local Dim3 blockIdx, blockDim, threadIdx, gridDim;
struct uint4 { u32 x, y, z, w; };

#define __launch_bounds__(...)
#define __shared__ static
#define __restrict__ __restrict

// Atomic for real: `launch_blocks` runs a block's threads concurrently.
inline u32 atomicAdd(u32* p, u32 v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}
inline u32 min(u32 a, u32 b) { return a < b ? a : b; }
inline u64 min(u64 a, u64 b) { return a < b ? a : b; }
inline u32 max(u32 a, u32 b) { return a > b ? a : b; }
inline u64 max(u64 a, u64 b) { return a > b ? a : b; }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline u32 __clz(u32 x) { return x == 0 ? 32 : (u32)__builtin_clz(x); }
inline u64 __brevll(u64 x) {
    u64 r = 0;
    for (int i = 0; i < 64; i++) r |= ((x >> i) & 1) << (63 - i);
    return r;
}

// A block's barrier: every thread of the block waits until all have arrived (generation count,
// so that it can be reused round after round).
struct BlockBarrier {
    std::mutex m;
    std::condition_variable cv;
    u32 count, waiting = 0;
    u64 generation = 0;
    explicit BlockBarrier(u32 n) : count(n) {}
    void wait() {
        std::unique_lock<std::mutex> lock(m);
        const u64 gen = generation;
        if (++waiting == count) {
            waiting = 0;
            generation++;
            cv.notify_all();
        } else {
            cv.wait(lock, [&] { return generation != gen; });
        }
    }
};
static thread_local BlockBarrier* block_barrier = nullptr;

// Outside `launch_blocks` block-cooperative steps are not emulated: the MSM driver computes the
// scans itself, and reaching one of these is a bug in the driver. The exception: barriers that
// only pace a block's warps (the lockstep accumulation), which the driver allows around that launch.
static bool pacing_barriers = false;
inline void __syncthreads() {
    if (block_barrier) block_barrier->wait();
    else if (!pacing_barriers) abort();
}
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

// One host thread per thread of a block, kept for every block of the launch: after a block, all
// meet once more before the next block starts (its shared memory is the same array).
template <class K>
void launch_blocks(u64 blocks, u32 threads, K kernel) {
    BlockBarrier bar(threads);
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (u32 t = 0; t < threads; t++) {
        pool.emplace_back([&, t] {
            gridDim.x = (u32)blocks;
            blockDim.x = threads;
            threadIdx.x = t;
            block_barrier = &bar;
            for (u64 blk = 0; blk < blocks; blk++) {
                blockIdx.x = (u32)blk;
                kernel();
                bar.wait();
            }
        });
    }
    for (auto& th : pool) th.join();
}
