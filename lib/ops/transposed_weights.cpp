// transposed_weights.h: the sets of transposed f32 weights and strided reads of them. Covered by
// tests/ops/transposed_weights_test.cpp.
#include "ops/transposed_weights.h"

#include <algorithm>

#include "common/cpu_threads.h"
#include "common/error.h"

namespace moe {

void TransposedWeights::add(const Tensor& w) {
  MOE_CHECK(w.shape().ndim() == 2 && w.dtype() == DType::f32 && w.device().is_cpu(),
            "TransposedWeights: a 2-D f32 CPU weight is required, got ", w.shape());
  const int64_t k = w.shape()[0], n = w.shape()[1];
  Tensor t = Tensor::empty(Shape{n, k}, DType::f32, Device::cpu());
  const float* src = w.data<float>();
  float* dst = t.data<float>();
  parallel_for(n, 16, [&](int64_t lo, int64_t hi) {  // a column of W per row of t
    for (int64_t j = lo; j < hi; ++j)
      for (int64_t r = 0; r < k; ++r) dst[j * k + r] = src[r * n + j];
  });
  by_data_[w.raw()] = Entry{w.shape(), std::move(t)};
}

const Tensor* TransposedWeights::find(const Tensor& w) const {
  if (w.numel() == 0 || w.dtype() != DType::f32) return nullptr;
  auto it = by_data_.find(w.raw());
  return it != by_data_.end() && it->second.shape == w.shape() ? &it->second.t : nullptr;
}

size_t TransposedWeights::bytes() const {
  size_t b = 0;
  for (const auto& [p, e] : by_data_) b += e.t.bytes();
  return b;
}

void copy_strided_from_transposed(const Tensor& wt, float* out, int64_t outer, int64_t len, int64_t full,
                                  int64_t off) {
  const int64_t n = wt.shape()[0], k = wt.shape()[1];
  const float* t = wt.data<float>();
  if (outer == 0 || len == 0) return;
  const int64_t last = (outer - 1) * full + off + len - 1;  // the largest flat index read
  MOE_CHECK(off >= 0 && n > 0 && last / n < k, "copy_strided_from_transposed: index ", last, " outside the weight [", k,
            ", ", n, "]");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < len; ++i) {
      const int64_t idx = o * full + off + i, r = idx / n, c = idx % n;  // W[r, c] = t[c, r]
      out[o * len + i] = t[c * k + r];
    }
}

}  // namespace moe
