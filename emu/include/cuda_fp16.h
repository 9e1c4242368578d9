// CUDA emulator (emu/README.md): __half, IEEE binary16 with the conversions of CUDA's cuda_fp16.h
// (round to nearest even, subnormals; NaN becomes the canonical 0x7fff), and __half2 storage.
#pragma once
#include <cstdint>
#include <cstring>

#include "moe_emu/qualifiers.h"
#include "moe_emu/runtime.h"

namespace moe_emu {
inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7fffu;  // NaN: CUDA's canonical half NaN
  if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    const uint32_t e = abs >> 23, m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value / 2^-24 = m * 2^(e - 126)
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0x1f) {
    x = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while (!(m & 0x400u)) m <<= 1, ++shift;
      x = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((m & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
}  // namespace moe_emu

struct alignas(2) __half {
  unsigned short __x;
  __half() = default;
  __host__ __device__ __half(float f) : __x(moe_emu::float_to_half_bits(f)) {}
  __host__ __device__ operator float() const { return moe_emu::half_bits_to_float(__x); }
};
struct alignas(4) __half2 {
  __half x, y;
};
typedef __half half;

__host__ __device__ inline __half __float2half(float f) { return __half(f); }
__host__ __device__ inline __half __float2half_rn(float f) { return __half(f); }
__host__ __device__ inline float __half2float(__half h) { return moe_emu::half_bits_to_float(h.__x); }
MOE_EMU_INLINE __half atomicAdd(__half* p, __half v) {
  __half old;
  old.__x = moe_emu::atomic_add_half(&p->__x, float(v));
  return old;
}
