// CUDA emulator (emu/README.md): __nv_bfloat16 with the conversions of CUDA's cuda_bf16.h (float to
// bfloat16 rounds to nearest even; NaN becomes the canonical 0x7fff).
#pragma once
#include <cstdint>
#include <cstring>

#include "moe_emu/qualifiers.h"
#include "moe_emu/runtime.h"

namespace moe_emu {
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
}  // namespace moe_emu

struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __host__ __device__ __nv_bfloat16(float f) : __x(moe_emu::float_to_bf16_bits(f)) {}
  __host__ __device__ operator float() const { return moe_emu::bf16_bits_to_float(__x); }
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
typedef __nv_bfloat16 nv_bfloat16;

__host__ __device__ inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
__host__ __device__ inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
__host__ __device__ inline float __bfloat162float(__nv_bfloat16 b) { return moe_emu::bf16_bits_to_float(b.__x); }
MOE_EMU_INLINE __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  __nv_bfloat16 old;
  old.__x = moe_emu::atomic_add_bfloat16(&p->__x, float(v));
  return old;
}
