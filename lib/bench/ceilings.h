// The device ceilings moe-bench reports fractions of, measured at the start of a run (no datasheet
// numbers): compute = the reference GEMM (reference_gemm.h: cuBLASLt on a GPU, BLAS on the CPU) in the
// run's dtype at the scale's largest square shape (8192^3 on a GPU), FLOPs 2*n^3; bandwidth = a
// device-to-device copy (cudaMemcpyAsync; memcpy on the CPU) of 1 GiB on a GPU, counted as read + write:
// 2 * bytes / time. Both are emitted as rows of the case "ceiling". Covered by tests/bench/bench_test.cpp.
#pragma once
#include "bench/context.h"

namespace moe::bench {

/// Measures both ceilings and emits their rows (case "ceiling"); `ceilings` is filled before the rows
/// go out, so the sink sees the final values.
void measure_ceilings(BenchContext& ctx, Ceilings& ceilings);

}  // namespace moe::bench
