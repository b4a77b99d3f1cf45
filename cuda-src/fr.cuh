// BLS12-381 scalar field Fr (255-bit r), 8 x 32-bit limbs, Montgomery form as in blst/blstrs.
struct FrParams {
    static constexpr int N = 8;
    static constexpr u32 M[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                                 0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
    static constexpr u32 ONE[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                                   0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
    static constexpr u32 INV = 0xffffffffu;
};
typedef Field<FrParams> Fr;
