// BLS12-381 base field Fp (381-bit p), 12 x 32-bit limbs, Montgomery form as in blst/blstrs.
struct FpParams {
    static constexpr int N = 12;
    static constexpr u32 M[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                                  0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                                  0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
    static constexpr u32 ONE[12] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu,
                                    0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u,
                                    0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
    static constexpr u32 INV = 0xfffcfffdu;
    static __device__ __forceinline__ u32 inv() { return INV; }
};
typedef Field<FpParams> Fp;
