// bench.h implementation: options and their checks, the derived rates of a row, and run_bench, which
// measures the ceilings, runs the selected cases (a failing case is reported and the run goes on) and
// prints rows as they come. Covered by tests/bench/bench_test.cpp.
#include "bench/bench.h"

#include <fstream>
#include <iostream>
#include <regex>

#include "bench/cases.h"
#include "bench/ceilings.h"
#include "bench/table.h"
#include "ops/kernel_variants.h"
#include "tensor/allocator.h"
#include "tensor/cuda_runtime.h"

namespace moe::bench {

Scale scale_from_name(const std::string& name) {
  if (name == "full") return Scale::full;
  if (name == "small") return Scale::small;
  if (name == "tiny") return Scale::tiny;
  MOE_FAIL("moe-bench: scale '", name, "' is unknown (known: full, small, tiny)");
}

const char* scale_name(Scale s) { return s == Scale::full ? "full" : s == Scale::small ? "small" : "tiny"; }

BenchOptions default_options(Device device) {
  BenchOptions o;
  o.device = device;
  if (device.is_cuda()) {
    o.dtype = DType::bf16;
    o.scale = Scale::full;
    o.repeat = 50;
    o.warmup = 10;
  } else {
    o.dtype = DType::f32;
    o.scale = Scale::small;
    o.repeat = 5;
    o.warmup = 1;
  }
  return o;
}

double Row::tflops() const { return flops > 0 && timing.median_ms > 0 ? flops / (timing.median_ms * 1e-3) / 1e12 : 0; }
double Row::gbps() const { return bytes > 0 && timing.median_ms > 0 ? bytes / (timing.median_ms * 1e-3) / 1e9 : 0; }
double Row::tokens_per_s() const { return tokens > 0 && timing.median_ms > 0 ? tokens / (timing.median_ms * 1e-3) : 0; }

double Ceilings::fraction(const Row& r) const {
  if (r.flops > 0 && tflops > 0) return r.tflops() / tflops;
  if (r.bytes > 0 && gbps > 0) return r.gbps() / gbps;
  return 0;
}

std::vector<std::string> list_cases() {
  std::vector<std::string> out;
  for (const Case& c : all_cases())
    out.push_back(c.name + std::string(c.name.size() < 24 ? 24 - c.name.size() : 1, ' ') + c.what);
  return out;
}

std::vector<std::string> variant_table() {
  std::vector<std::string> out{"variant\tmin_sm\tsm90a\tdtypes\tsass\tkernels\tshapes"};
  auto join = [](const auto& items, auto text) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : ",") + std::string(text(i));
    return s;
  };
  for (const KernelVariant& v : kernel_variants())
    out.push_back(v.name() + "\t" + std::to_string(v.min_sm) + "\t" + (v.needs_sm90a ? "yes" : "no") + "\t" +
                  join(v.dtypes, [](DType d) { return dtype_name(d); }) + "\t" + (v.sass().empty() ? "-" : v.sass()) +
                  "\t" + join(v.kernels, [](const std::string& k) { return k; }) + "\t" + v.shapes);
  return out;
}

namespace {
void check_options(const BenchOptions& o) {
  MOE_CHECK(o.repeat >= 1 && o.warmup >= 0, "moe-bench: --repeat ", o.repeat, " must be >= 1 and --warmup ", o.warmup,
            " >= 0");
  MOE_CHECK(o.format == "text" || o.format == "json", "moe-bench: --format '", o.format, "' is unknown (text, json)");
  if (o.device.is_cuda()) {
    MOE_CHECK(built_with_cuda(), "moe-bench: --device ", o.device, " but this build has no CUDA support");
    MOE_CHECK(o.device.index < gpu_count(), "moe-bench: --device ", o.device, " is not available (", gpu_count(),
              " GPUs answer)");
    MOE_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16 || o.dtype == DType::f32, "moe-bench: --dtype ",
              dtype_name(o.dtype), " is not supported on a GPU (bf16, f16, f32)");
  } else {
    MOE_CHECK(o.dtype == DType::f32 || o.dtype == DType::f64, "moe-bench: --dtype ", dtype_name(o.dtype),
              " is not supported on the CPU (f32, f64: the CPU kernels are references)");
  }
}

std::regex compile_filter(const std::string& filter) {
  try {
    return std::regex(filter.empty() ? std::string(".*") : filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    MOE_FAIL("moe-bench: --filter '", filter, "' is not a valid regular expression (", e.what(), ")");
  }
}
}  // namespace

BenchReport run_bench(const BenchOptions& options, std::ostream& out) {
  check_options(options);
  const std::regex filter = compile_filter(options.filter);
  std::ofstream json_file;
  if (!options.json_path.empty()) {
    json_file.open(options.json_path, std::ios::app);
    MOE_CHECK(json_file, "moe-bench: cannot open --json-out file '", options.json_path, "'");
  }
  const bool text = options.format == "text";
  const std::string device =
      options.device.is_cuda() ? cuda::device_name(options.device.index) + " (" + options.device.str() + ")" : "cpu";
  BenchReport report;
  auto sink = [&](const Row& r) {
    report.rows.push_back(r);
    if (text)
      out << text_row(r, report.ceilings) << std::endl;
    else
      out << json_row(r, report.ceilings, device) << std::endl;
    if (json_file) json_file << json_row(r, report.ceilings, device) << std::endl;
  };
  if (text) {
    out << "# moe-bench on " << device << ": dtype " << dtype_name(options.dtype) << ", scale "
        << scale_name(options.scale) << ", median of " << options.repeat << " calls after " << options.warmup
        << " warm-up calls" << (options.device.is_cuda() ? ", CUDA events" : ", std::chrono")
        << (options.device.is_cuda() && options.flush_l2 ? ", L2 flushed before each call" : "") << "\n"
        << text_columns() << std::endl;
  }
  BenchContext ctx(options, sink);
  auto release = [&] { allocator_for(options.device).release_cache(); };
  if (options.ceilings) {
    measure_ceilings(ctx, report.ceilings);
    release();
  }
  for (const Case& c : all_cases()) {
    if (!std::regex_search(c.name, filter)) continue;
    ctx.set_case(c.name);
    try {
      c.run(ctx);
    } catch (const std::exception& e) {
      report.failures.push_back(c.name + ": " + e.what());
      std::cerr << "moe-bench: case " << c.name << " failed: " << e.what() << std::endl;
      if (text) out << "# " << c.name << " FAILED: " << e.what() << std::endl;
    }
    release();
  }
  if (text && options.ceilings)
    out << "# ceilings measured in this run: compute " << report.ceilings.tflops << " TFLOP/s ("
        << report.ceilings.gemm_shape << "), bandwidth " << report.ceilings.gbps << " GB/s (copy of "
        << report.ceilings.copy_shape << ", read + write)" << std::endl;
  return report;
}

}  // namespace moe::bench
