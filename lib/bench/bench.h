// moe-bench, the per-kernel benchmark: its options, its result rows and the library entry run_bench().
// Each case (lib/bench/*_cases.cpp, listed in cases.cpp) builds random inputs, times its kernels (the
// median of `repeat` calls after `warmup` calls; CUDA events on a GPU, std::chrono on the CPU) and emits
// rows. A row carries either the FLOPs of one call (compute-bound: TFLOP/s, and the fraction of the
// measured compute ceiling) or the bytes of one call (memory-bound: GB/s, and the fraction of the
// measured copy bandwidth); ceilings.cpp measures both ceilings first. Whole-model rows (model.*) also
// carry the tokens of one call (tokens/s = tokens / median time). Output: a text table and/or
// JSON lines (table.cpp). Covered by tests/bench/bench_test.cpp (CPU, tiny shapes) and
// tests/gpu/bench_parity_test.cpp (the same on a GPU).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"

namespace moe::bench {

/// Shape presets: full = the transformer-base shapes of docs/PERF.md (GPU default), small = a few
/// seconds on a CPU (CPU default), tiny = milliseconds (tests).
enum class Scale { full, small, tiny };
Scale scale_from_name(const std::string& name);
const char* scale_name(Scale s);

struct BenchOptions {
  Device device = Device::cpu();
  DType dtype = DType::f32;  // activations and GEMM operands (Adam is always f32)
  Scale scale = Scale::small;
  int repeat = 20;       // timed calls per row (the median is reported)
  int warmup = 3;        // untimed calls before them
  std::string filter;    // ECMAScript regex searched in case names; empty = every case
  bool flush_l2 = true;  // GPU: overwrite a 256 MiB buffer before every timed call (cold L2, as in triton's do_bench)
  bool ceilings = true;  // measure the copy and GEMM ceilings first (else fractions are left out)
  std::string format = "text";  // text | json (one JSON object per row)
  std::string json_path;        // also append JSON lines here (empty: none)
};

/// The kernel variant table (ops/kernel_variants.h), one tab-separated line per variant after a header:
/// name, minimum compute capability, sm_90a only, dtypes, SASS class, kernels, shapes.
std::vector<std::string> variant_table();

/// Options for `device` with its defaults: bf16, full shapes, 50 + 10 calls on a GPU; f32, small shapes,
/// 5 + 1 calls on the CPU.
BenchOptions default_options(Device device);

/// Timing of one kernel: statistics of the per-call milliseconds.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int calls = 0;
};

struct Row {
  std::string case_name = {};  // the case (matched by --filter), e.g. "gemm.ffn_up"
  std::string label = {};      // the kernel within it, e.g. "matmul" or "fwd+bwd"
  std::string shape = {};      // e.g. "16384x512 @ 512x2048"
  std::string dtype = {};
  Timing timing = {};
  double flops = 0;   // per call (> 0: a compute-bound row)
  double bytes = 0;   // per call (> 0: a memory-bound row): minimal bytes, each input read and each output written once
  double tokens = 0;  // per call (> 0: a whole-model training update): the target tokens it trains on
  double ratio = 0;   // time relative to `baseline` (another row's label in the same case); 0 = none
  std::string baseline = {};
  std::string note = {};
  std::string variant = {};  // the kernel variant that ran (ops/kernel_variants.h), e.g. "grouped_gemm:mma"
  std::string name() const { return case_name + "/" + label; }
  double tflops() const;        // flops / median time / 1e12 (0 when flops == 0)
  double gbps() const;          // bytes / median time / 1e9 (0 when bytes == 0)
  double tokens_per_s() const;  // tokens / median time in seconds (0 when tokens == 0)
};

/// The measured ceilings of the device (0 = not measured).
struct Ceilings {
  double tflops = 0;  // the reference GEMM (cuBLASLt / BLAS) at the scale's largest square shape
  double gbps = 0;    // a device-to-device copy: 2 * bytes (read + write) / time
  std::string gemm_shape, copy_shape;
  /// Fraction of the ceiling that row reaches (compute for FLOP rows, bandwidth for byte rows; 0 = unknown).
  double fraction(const Row& r) const;
};

struct BenchReport {
  Ceilings ceilings;
  std::vector<Row> rows;
  std::vector<std::string> failures;  // "case: message" for cases that threw (the others still run)
};

/// Measures the ceilings (unless disabled), runs every case whose name matches the filter and prints the
/// rows to `out` as they come (text table or JSON lines). Throws moe::Error for bad options.
BenchReport run_bench(const BenchOptions& options, std::ostream& out);

/// "name  what" lines of every case, for --list.
std::vector<std::string> list_cases();

}  // namespace moe::bench
