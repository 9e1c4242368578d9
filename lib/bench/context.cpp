// context.h implementation. Covered by tests/bench/bench_test.cpp.
#include "bench/context.h"

#include <utility>

#include "tensor/cuda_runtime.h"

namespace moe::bench {
namespace {
constexpr int64_t kFlushBytes = int64_t{256} << 20;  // larger than the L2 of an H100 / H200 (50 MiB)
}

BenchContext::BenchContext(const BenchOptions& options, std::function<void(const Row&)> sink)
    : options_(options), sink_(std::move(sink)) {
  if (options_.device.is_cuda() && options_.flush_l2)
    flush_ = Tensor::empty(Shape{kFlushBytes}, DType::u8, options_.device);
}

Tensor BenchContext::random(const Shape& shape, DType dtype, double lo, double hi) {
  return random_tensor(shape, dtype, device(), seed_++, lo, hi);
}

Tensor BenchContext::classes(const Shape& shape, int64_t classes) {
  return random_classes(shape, classes, device(), seed_++);
}

std::string BenchContext::variant(KernelOp op) const {
  if (!device().is_cuda()) return "";
  return choose_kernel(op, dtype(), cuda::compute_capability(device().index)).name();
}

Timing BenchContext::time(const std::function<void()>& fn) {
  std::function<void()> before;
  if (flush_.defined()) before = [this] { flush_.zero_(); };
  return time_calls(device(), options_.warmup, options_.repeat, fn, before);
}

void BenchContext::emit(Row row) {
  row.case_name = case_;
  if (row.dtype.empty()) row.dtype = dtype_name(dtype());
  sink_(row);
}

std::string shape_text(const Shape& a) {
  std::string s;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i) s += 'x';
    s += std::to_string(a[i]);
  }
  return s;
}

std::string shape_text(const Shape& a, const Shape& b) { return shape_text(a) + " @ " + shape_text(b); }

}  // namespace moe::bench
