// Random benchmark inputs (never zeros: zero operands can make kernels and tensor cores look faster
// than they are). Values are uniform in [lo, hi) from Philox (tensor/philox.h) keyed by (seed, stream);
// a tensor larger than one block of 4 Mi + 13 elements repeats that block (uploaded once, then copied
// on the device), so multi-GiB inputs cost one small host draw. Covered by tests/bench/bench_test.cpp.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace moe::bench {

/// Uniform [lo, hi) values of `dtype` (floating) with `shape` on `device`.
Tensor random_tensor(const Shape& shape, DType dtype, Device device, uint64_t seed, double lo = -1, double hi = 1);
/// i32 values uniform in [0, classes) (class targets, token ids).
Tensor random_classes(const Shape& shape, int64_t classes, Device device, uint64_t seed);

}  // namespace moe::bench
