// timer.h implementation. Covered by tests/bench/bench_test.cpp ("summarize", and every row of a run).
#include "bench/timer.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "tensor/cuda_runtime.h"

namespace moe::bench {

Timing summarize(std::vector<double> ms) {
  MOE_CHECK(!ms.empty(), "bench: no timed calls to summarise");
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  Timing t;
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.calls = static_cast<int>(n);
  return t;
}

Timing time_calls(Device device, int warmup, int repeat, const std::function<void()>& fn,
                  const std::function<void()>& before) {
  MOE_CHECK(warmup >= 0 && repeat >= 1, "bench: warmup ", warmup, " must be >= 0 and repeat ", repeat, " >= 1");
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  if (device.is_cuda()) {
    cuda::synchronize(device.index);
    for (float t : cuda::time_calls_on_device_ms(device.index, repeat, fn, before)) ms.push_back(t);
    return summarize(std::move(ms));
  }
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < repeat; ++i) {
    if (before) before();
    const auto t0 = clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  return summarize(std::move(ms));
}

}  // namespace moe::bench
