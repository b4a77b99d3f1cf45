// Host build of the cuzk CUDA field and curve headers (cuda-src/field.cuh … curve.cuh) for the
// test engine/tests/cuda_math_on_host.rs: it stands in for cuda-src/common.cuh, whose PTX
// carry-chain helpers it emulates with an explicit carry flag (PTX semantics: `.cc` writes the
// carry, or the borrow for subtraction; `addc`/`subc` read it).
#include <cfenv>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

typedef uint32_t u32;
typedef uint64_t u64;

#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __global__
#define __constant__

// One carry flag per emulated thread (the NTT's blocks run their threads concurrently).
static thread_local u32 CF;

inline u32 add_cc(u32 a, u32 b) { u64 r = (u64)a + b; CF = (u32)(r >> 32); return (u32)r; }
inline u32 addc_cc(u32 a, u32 b) { u64 r = (u64)a + b + CF; CF = (u32)(r >> 32); return (u32)r; }
inline u32 addc(u32 a, u32 b) { return a + b + CF; }
inline u32 sub_cc(u32 a, u32 b) { u64 r = (u64)a - b; CF = (u32)(r >> 32) & 1; return (u32)r; }
inline u32 subc_cc(u32 a, u32 b) { u64 r = (u64)a - b - CF; CF = (u32)(r >> 32) & 1; return (u32)r; }
inline u32 subc(u32 a, u32 b) { return a - b - CF; }
inline u32 lo(u32 a, u32 b) { return (u32)((u64)a * b); }
inline u32 hi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }
inline u32 mad_lo_cc(u32 a, u32 b, u32 c) { return add_cc(lo(a, b), c); }
inline u32 madc_lo_cc(u32 a, u32 b, u32 c) { return addc_cc(lo(a, b), c); }
inline u32 mad_hi_cc(u32 a, u32 b, u32 c) { return add_cc(hi(a, b), c); }
inline u32 madc_hi_cc(u32 a, u32 b, u32 c) { return addc_cc(hi(a, b), c); }

// The FP64 intrinsics of fr52.cuh. The host build has -frounding-math, so the compiler keeps
// each fma inside its rounding mode.
inline long long __double_as_longlong(double x) { long long r; memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; memcpy(&r, &x, 8); return r; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __fma_rz(double a, double b, double c) {
    const int mode = std::fegetround();
    std::fesetround(FE_TOWARDZERO);
    const double r = std::fma(a, b, c);
    std::fesetround(mode);
    return r;
}
