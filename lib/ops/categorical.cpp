// CPU reference of categorical sampling (math in categorical.h) and the checked, dispatched entry
// point. Covered by tests/ops/categorical_test.cpp.
#include "ops/categorical.h"

#include "ops/dispatch.h"

namespace moe {

namespace cpu {
namespace {
template <class T>
void sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream) {
  const int n = static_cast<int>(probs.shape().last());
  const int64_t rows = out.numel();
  const T* p = probs.data<T>();
  int32_t* o = out.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = p + r * n;
    const T u = static_cast<T>(philox_uniform(seed, stream, static_cast<uint64_t>(r)));
    o[r] = categorical_pick<T>([row](int e) { return row[e]; }, n, u);
  }
}
}  // namespace

void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream) {
  check_cpu_float("categorical_sample", probs);
  if (probs.dtype() == DType::f64)
    sample<double>(probs, out, seed, stream);
  else
    sample<float>(probs, out, seed, stream);
}
}  // namespace cpu

void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream) {
  const char* op = "categorical_sample";
  MOE_CHECK(is_floating(probs.dtype()), op, ": weights must be floating, not ", dtype_name(probs.dtype()));
  MOE_CHECK(probs.shape().ndim() >= 1 && probs.shape().last() >= 1 && probs.shape().last() <= (int64_t{1} << 30), op,
            ": weights need a non-empty last (category) axis, not shape ", probs.shape());
  std::vector<int64_t> dims = probs.shape().vec();
  dims.back() = 1;
  check_same_device(op, probs, out);
  check_shape(op, "output", out, Shape(dims));
  check_dtype(op, "output", out, DType::i32);
  if (out.numel() == 0) return;
  MOE_DISPATCH(probs, categorical_sample, probs, out, seed, stream);
}

}  // namespace moe
