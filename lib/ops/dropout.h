// Dropout with counter-based masks: y = x * m / (1 - p), m_i = [philox_uniform(seed, rng_stream, i) >= p]
// (tensor/philox.h), so the CPU and a GPU draw the same mask for the same (seed, rng_stream) and
// the backward dx += dy * m / (1 - p) recomputes it instead of storing it.
// Covered by tests/ops/dropout_test.cpp and tests/gpu/dropout_parity_test.cpp (exact mask parity).
#pragma once
#include <cstdint>

#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace moe {

/// Whether element i is kept (shared by the CPU and CUDA kernels).
MOE_HD bool dropout_keep(uint64_t seed, uint64_t rng_stream, uint64_t i, float p) {
  return philox_uniform(seed, rng_stream, i) >= p;
}

/// The CPU kernels' dropout factors: out[j] = mask / (1 - p) of element e + j, for j < count <=
/// kDropoutChunk. The Philox blocks that cover the run are drawn first, in a loop of their own that
/// the compiler vectorises (one draw per four elements, the lanes of dropout_keep).
constexpr int64_t kDropoutChunk = 256;
template <class T>
void dropout_factors(uint64_t seed, uint64_t rng_stream, float p, T scale, uint64_t e, int64_t count, T* out) {
  float u[kDropoutChunk + 8];
  const uint64_t q0 = e >> 2, q1 = (e + static_cast<uint64_t>(count) + 3) >> 2;
  for (uint64_t q = q0; q < q1; ++q) philox_uniform4(seed, rng_stream, q, u + 4 * (q - q0));
  const float* v = u + (e & 3);
  for (int64_t j = 0; j < count; ++j) out[j] = v[j] >= p ? scale : T(0);
}

namespace cpu {
void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream);
void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream);
}  // namespace cpu
namespace cuda {
void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream);
void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream);
}  // namespace cuda

/// y = x * mask / (1 - p); 0 <= p < 1.
void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream);
/// dx += dy * mask / (1 - p), with the mask of the same (seed, rng_stream).
void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream);

}  // namespace moe
