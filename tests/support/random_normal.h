// A random f32 CPU tensor with entries drawn from N(0, sd^2) by a seeded std::mt19937: the test inputs of
// the int8 GEMM tests (tests/ops/int8_gemm_test.cpp) and the expert-parallel layer test
// (tests/dist/expert_parallel_test.cpp).
#pragma once
#include <random>
#include <vector>

#include "tensor/tensor.h"

namespace moe::test {

inline Tensor random_normal(const Shape& shape, uint32_t seed, float sd = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (auto& x : v) x = nd(rng);
  return Tensor::from_vector(v, shape);
}

}  // namespace moe::test
