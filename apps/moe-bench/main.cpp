// moe-bench: per-kernel timings (median ms), TFLOP/s or GB/s and the fraction of the device ceiling
// measured in the same run, as a text table or JSON lines. `moe-bench --device cuda` (bf16,
// transformer-base shapes) or `--device cpu` (f32, small shapes); --list shows the cases, --list-variants
// the kernel variant table (the SASS check of scripts/internal/kernel-sass.sh reads it), --filter
// picks them by regex, --has-gpu answers whether a GPU is there (scripts/demo.sh; the CUDA emulator's
// devices do not count), --has-cuda whether cuda:0 exists at all (tests/scripts/cuda_e2e.sh), --cpu-info
// what runs the CPU work (scripts/bench-cpu.sh). Logic in lib/bench/ (bench.h); covered by
// tests/bench/bench_test.cpp. Under mpirun / srun only rank 0 prints (the dist.* cases).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "bench/bench.h"
#include "cli/program.h"
#include "common/cpu_threads.h"
#include "common/json.h"
#include "dist/launch_env.h"
#include "ops/cpu_gemm.h"
#include "tensor/device.h"

namespace {
int run(int argc, char** argv) {
  CLI::App app{"moe-bench: per-kernel timings, TFLOP/s or GB/s and the fraction of the measured device ceiling"};
  std::string device = "auto", dtype, scale, format = "text", filter, json_out;
  int repeat = 0, warmup = -1;
  bool list = false, list_variants = false, no_flush = false, no_ceilings = false, has_gpu = false, has_cuda = false,
       cpu_info = false;
  app.add_option("--device", device, "cpu, cuda, cuda:N or auto (a GPU when one answers)");
  app.add_option("--dtype", dtype, "activation / GEMM dtype (default bf16 on a GPU, f32 on the CPU)");
  app.add_option("--scale", scale, "shapes: full (transformer-base; GPU default), small (CPU default), tiny")
      ->check(CLI::IsMember({"full", "small", "tiny"}));
  app.add_option("--filter", filter, "run only cases whose name matches this regex (see --list)");
  app.add_option("--repeat", repeat, "timed calls per kernel; the median is reported (default 50 GPU, 5 CPU)");
  app.add_option("--warmup", warmup, "untimed calls before them (default 10 GPU, 1 CPU)");
  app.add_option("--format", format, "stdout format: text (a table) or json (one JSON object per row)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--json-out", json_out, "also append the rows as JSON lines to this file");
  app.add_flag("--no-flush", no_flush, "GPU: do not flush the L2 cache (256 MiB write) before each timed call");
  app.add_flag("--no-ceilings", no_ceilings, "skip measuring the copy and GEMM ceilings (no % ceil column)");
  app.add_flag("--list", list, "list the cases and exit");
  app.add_flag("--list-variants", list_variants,
               "print the kernel variant table (op:variant, architecture, dtypes, SASS class, kernels) as "
               "tab-separated lines and exit; MOE_KERNEL=op:variant forces one");
  app.add_flag("--has-gpu", has_gpu, "print how many GPUs answer and exit 0 when there is one, else 1 (scripts)");
  app.add_flag("--has-cuda", has_cuda,
               "exit 0 when cuda:0 exists, a GPU or the CUDA emulator's device (emu/), else 1 (scripts)");
  app.add_flag("--cpu-info", cpu_info,
               "print the CPU, moe's kernel set, the f32 GEMM backend, OpenBLAS's kernels and the threads the "
               "process runs (before any op) as one JSON object and exit (scripts/bench-cpu.sh records it)");
  moe::cli::add_cpu_threads_option(app);
  CLI11_PARSE(app, argc, argv);
  // Under mpirun / srun (the dist.* cases) rank 0 alone prints; the others only take part.
  if (moe::dist::launch_env_from_environment().rank != 0) {
    json_out.clear();
    if (!std::freopen("/dev/null", "w", stdout)) return 1;
  }
  try {
    if (has_gpu || has_cuda) {
      const bool emulated = moe::cuda_emulated() && moe::gpu_count() > 0;
      std::cout << moe::gpu_count() << (emulated ? " (emulated on the CPU)" : "") << "\n";
      return moe::gpu_count() > 0 && (has_cuda || !emulated) ? 0 : 1;
    }
    if (cpu_info) {
      const moe::CpuComputeInfo i = moe::cpu_compute_info();
      std::cout << moe::JsonObject()
                       .add("cpu", i.cpu)
                       .add("kernels", moe::enum_name(i.kernels))
                       .add("gemm", moe::enum_name(i.gemm))
                       .add("openblas", i.openblas)
                       .add("openblas_coretype", i.openblas_coretype)
                       .add("threads", moe::process_threads())
                       .str()
                << "\n";
      return 0;
    }
    if (list) {
      for (const std::string& line : moe::bench::list_cases()) std::cout << line << "\n";
      return 0;
    }
    if (list_variants) {
      for (const std::string& line : moe::bench::variant_table()) std::cout << line << "\n";
      return 0;
    }
    moe::bench::BenchOptions o = moe::bench::default_options(moe::Device::parse(device));
    if (!dtype.empty()) o.dtype = moe::dtype_from_name(dtype);
    if (!scale.empty()) o.scale = moe::bench::scale_from_name(scale);
    if (repeat > 0) o.repeat = repeat;
    if (warmup >= 0) o.warmup = warmup;
    o.filter = filter;
    o.format = format;
    o.json_path = json_out;
    o.flush_l2 = !no_flush;
    o.ceilings = !no_ceilings;
    const auto report = moe::bench::run_bench(o, std::cout);
    if (!report.failures.empty()) {
      std::cerr << "moe-bench: " << report.failures.size() << " case(s) failed\n";
      return 1;
    }
    if (report.rows.empty()) std::cerr << "moe-bench: no case matches --filter '" << filter << "'\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return moe::cli::run_program("moe-bench", argc, argv, run); }
