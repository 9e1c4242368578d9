// Philox-4x32-10 counter-based random numbers (Salmon et al. 2011), usable on host and device.
// The same (seed, counter) gives the same numbers on the CPU and on a GPU, so dropout masks,
// gate noise and sampling do not depend on the device. Covered by tests/unit/tensor_test.cpp
// (the Random123 known-answer vector) and by the dropout CPU-vs-CUDA parity test.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MOE_HD __host__ __device__ __forceinline__
#else
#define MOE_HD inline
#endif

namespace moe {

struct Philox4 {
  uint32_t v[4];
};

MOE_HD uint32_t mulhilo32(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

/// Ten rounds of Philox4x32 on counter `ctr` with key `key`.
MOE_HD Philox4 philox4x32(Philox4 ctr, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo32(0xD2511F53u, ctr.v[0], &hi0);
    const uint32_t lo1 = mulhilo32(0xCD9E8D57u, ctr.v[2], &hi1);
    ctr = Philox4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

/// Four uniform numbers in [0, 1) for element block `index` of stream `offset` under `seed`.
MOE_HD void philox_uniform4(uint64_t seed, uint64_t offset, uint64_t index, float out[4]) {
  const Philox4 c{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(offset),
                   static_cast<uint32_t>(offset >> 32)}};
  const Philox4 r = philox4x32(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  for (int i = 0; i < 4; ++i) out[i] = static_cast<float>(r.v[i] >> 8) * (1.0f / 16777216.0f);
}

/// The uniform number for element `i` of stream `offset` (element i uses lane i % 4 of block i / 4).
MOE_HD float philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  float u[4];
  philox_uniform4(seed, offset, i / 4, u);
  return u[i % 4];
}

/// A standard normal number for element `i` (Box-Muller on two lanes of one block).
MOE_HD float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  float u[4];
  philox_uniform4(seed, offset, i / 2, u);
  const int lane = static_cast<int>(i % 2);
  const float u1 = u[2 * lane] + 1.0f / 33554432.0f;  // avoid log(0)
  const float u2 = u[2 * lane + 1];
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

}  // namespace moe
