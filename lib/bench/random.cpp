// random.h implementation. Covered by tests/bench/bench_test.cpp ("random inputs").
#include "bench/random.h"

#include <algorithm>
#include <vector>

#include "tensor/philox.h"

namespace moe::bench {
namespace {
constexpr int64_t kBlock = (int64_t{1} << 22) + 13;  // odd length: rows do not repeat in lockstep
constexpr uint64_t kStream = 0xbe7c;
}  // namespace

Tensor random_tensor(const Shape& shape, DType dtype, Device device, uint64_t seed, double lo, double hi) {
  MOE_CHECK(is_floating(dtype), "bench random_tensor: dtype ", dtype_name(dtype), " is not floating");
  MOE_CHECK(lo < hi, "bench random_tensor: empty range [", lo, ", ", hi, ")");
  const int64_t n = shape.numel(), block = std::min(n, kBlock);
  std::vector<float> host(static_cast<size_t>(block));
  for (int64_t i = 0; i < block; i += 4) {
    float u[4];
    philox_uniform4(seed, kStream, uint64_t(i / 4), u);
    for (int64_t l = 0; l < 4 && i + l < block; ++l)
      host[static_cast<size_t>(i + l)] = static_cast<float>(lo + (hi - lo) * static_cast<double>(u[l]));
  }
  if (block == n) return Tensor::from_vector(host, shape, device, dtype);
  const Tensor src = Tensor::from_vector(host, Shape{block}, device, dtype);
  Tensor out = Tensor::empty(shape, dtype, device);
  for (int64_t begin = 0; begin < n; begin += block) {
    const int64_t count = std::min(block, n - begin);
    out.flat_range(begin, count).copy_from(src.flat_range(0, count));
  }
  return out;
}

Tensor random_classes(const Shape& shape, int64_t classes, Device device, uint64_t seed) {
  MOE_CHECK(classes >= 1 && classes <= INT32_MAX, "bench random_classes: ", classes, " classes");
  std::vector<int32_t> host(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < host.size(); ++i)
    host[i] =
        static_cast<int32_t>(std::min<double>(double(classes - 1), philox_uniform(seed, kStream + 1, i) * classes));
  return Tensor::from_vector(host, shape, device, DType::i32);
}

}  // namespace moe::bench
