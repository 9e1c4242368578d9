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
