// What a moe-bench case works with: the run's options (device, dtype, scale), fresh random inputs, the
// timer (warm-up, repeat, the GPU L2 flush) and the sink its rows go to. Cases (cases.h) take a
// BenchContext& and call emit() once per kernel. Covered by tests/bench/bench_test.cpp.
#pragma once
#include <functional>
#include <string>

#include "bench/bench.h"
#include "bench/random.h"
#include "bench/timer.h"
#include "ops/kernel_variants.h"
#include "tensor/tensor.h"

namespace moe::bench {

class BenchContext {
 public:
  BenchContext(const BenchOptions& options, std::function<void(const Row&)> sink);
  BenchContext(const BenchContext&) = delete;
  BenchContext& operator=(const BenchContext&) = delete;

  const BenchOptions& options() const { return options_; }
  Device device() const { return options_.device; }
  DType dtype() const { return options_.dtype; }
  Scale scale() const { return options_.scale; }
  /// The value for the run's scale.
  template <class T>
  T pick(const T& full, const T& small, const T& tiny) const {
    return scale() == Scale::full ? full : scale() == Scale::small ? small : tiny;
  }

  /// Random inputs on the run's device (each call draws a new seed); dtype defaults to the run's.
  Tensor random(const Shape& shape, double lo = -1, double hi = 1) { return random(shape, dtype(), lo, hi); }
  Tensor random(const Shape& shape, DType dtype, double lo = -1, double hi = 1);
  Tensor classes(const Shape& shape, int64_t classes);

  /// Warm-up, then the timed calls of `fn` (after an L2 flush each on a GPU when asked).
  Timing time(const std::function<void()>& fn);
  /// Sends a finished row to the sink (the case name is filled in).
  void emit(Row row);
  /// The kernel variant `op` runs on the run's device and dtype ("" on the CPU).
  std::string variant(KernelOp op) const;
  void set_case(const std::string& name) { case_ = name; }

 private:
  BenchOptions options_;
  std::function<void(const Row&)> sink_;
  std::string case_;
  uint64_t seed_ = 1;
  Tensor flush_;  // 256 MiB, GPU runs with flush_l2 only
};

/// "16384x512" for a shape, "16384x512 @ 512x2048" for two.
std::string shape_text(const Shape& a);
std::string shape_text(const Shape& a, const Shape& b);

}  // namespace moe::bench
