// Categorical sampling, one draw per row of non-negative weights p [..., n] (need not sum to 1):
//   u_r = philox_uniform(seed, stream, r) in [0, 1);  out[r] = the first e with p[e] > 0 and
//   cumsum(p)[e] > u_r * sum(p), i.e. inverse-CDF sampling with P(e) = p[e] / sum(p).
// Zero, negative and NaN weights are never drawn; when rounding leaves no e the last positive one is
// taken; a row without positive weights gives 0. Accumulation in f32 (f64 for f64 weights) in index
// order on both devices, so the CPU and the GPU draw the same experts.
// CPU reference in lib/ops/categorical.cpp, CUDA in cuda/ops/categorical.cu. Covered by
// tests/ops/categorical_test.cpp and tests/gpu/categorical_parity_test.cpp.
#pragma once
#include <cstdint>

#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace moe {

/// The draw for one row of n weights read by load(e) (in the accumulation type A), uniform u.
template <class A, class Load>
MOE_HD int categorical_pick(const Load& load, int n, A u) {
  A total = 0;
  for (int e = 0; e < n; ++e) {
    const A p = load(e);
    if (p > A(0)) total += p;
  }
  const A target = u * total;
  A cum = 0;
  int last = -1;
  for (int e = 0; e < n; ++e) {
    const A p = load(e);
    if (!(p > A(0))) continue;
    cum += p;
    last = e;
    if (cum > target) return e;
  }
  return last >= 0 ? last : 0;
}

namespace cpu {
void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream);
}  // namespace cpu
namespace cuda {
void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream);
}  // namespace cuda

/// probs [..., n] floating (n >= 1); out i32 [..., 1] on the same device.
void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream);

}  // namespace moe
