// moe-bench timing: `warmup` untimed calls, then `repeat` timed calls of a kernel, summarised by the
// median (robust to the odd slow call), minimum and maximum. On a GPU each call sits between its own
// pair of CUDA events on the device's stream (tensor/cuda_runtime.h), launches queue back to back and
// an optional `before` (the L2 flush) runs ahead of each start event, untimed; on the CPU each call is
// timed with std::chrono::steady_clock (CPU ops return when done). Covered by tests/bench/bench_test.cpp.
#pragma once
#include <functional>
#include <vector>

#include "bench/bench.h"

namespace moe::bench {

/// Median, minimum and maximum of per-call milliseconds (an error for an empty list).
Timing summarize(std::vector<double> ms);

/// Times `fn` on `device` as described above; warmup >= 0, repeat >= 1.
Timing time_calls(Device device, int warmup, int repeat, const std::function<void()>& fn,
                  const std::function<void()>& before = {});

}  // namespace moe::bench
