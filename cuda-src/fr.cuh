// BLS12-381 scalar field Fr (255-bit r), 8 x 32-bit limbs, Montgomery form as in blst/blstrs.
__constant__ u32 FR_INV_OPAQUE = 0xffffffffu;  // FrParams::INV, see FrParams::inv()

struct FrParams {
    static constexpr int N = 8;
    static constexpr u32 M[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                                 0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
    static constexpr u32 ONE[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                                   0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
    static constexpr u32 INV = 0xffffffffu;
    // INV as the products read it: from constant memory, so that ptxas does not know the
    // reduction's multiplier m = E[0]·INV to be -E[0]. When it knows, it rewrites the rows'
    // m·M[j] as pairs of narrow multiply-adds (IMAD.X + IMAD.HI.U32.X, 6 multiply-pipe cycles,
    // against 4 for one IMAD.WIDE.U32.X): an Fr product took 614 instead of 480 multiply-pipe
    // cycles (SASS, NVRTC 13.0, sm_90), and ran at 5.21e10 instead of 6.35e10 a second on an H200.
    static __device__ __forceinline__ u32 inv() { return FR_INV_OPAQUE; }
};
typedef Field<FrParams> Fr;
