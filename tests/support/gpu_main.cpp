// main() of the GPU parity executable: exits 77 ("skipped" under ctest) when no GPU answers,
// so a CUDA build on a machine without a GPU reports the suite as Skipped, never as passed. It
// prints why no GPU answered (e.g. a driver older than the CUDA runtime); with MOE_REQUIRE_GPU=1
// in the environment (a session that has a GPU) it fails instead of skipping. Under the CUDA emulator
// (MOE_CUDA_EMU builds) a run of the whole suite also fails when some __global__ instantiation compiled
// into moe was never launched, or when a __global__ defined in cuda/ (counted from the sources, so a
// template never instantiated counts too) was never launched: every kernel must meet its CPU
// reference. That run also writes emu-kernels.tsv (name, launched, largest block, most dynamic shared
// memory) for the register-budget and kernel-SASS tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tensor/cuda_runtime.h"
#include "tensor/device.h"
#ifdef MOE_CUDA_EMU
#include "moe_emu/control.h"
#endif

int main(int argc, char** argv) {
  if (!moe::built_with_cuda() || !moe::has_gpu()) {
    const char* require = std::getenv("MOE_REQUIRE_GPU");
    const bool required = require && require[0] == '1';
    std::printf("no GPU available (CUDA %s: %s): %s the GPU parity tests\n",
                moe::built_with_cuda() ? "built in" : "not built in", moe::cuda::no_gpu_reason().c_str(),
                required ? "MOE_REQUIRE_GPU=1, failing" : "skipping");
    return required ? 1 : 77;
  }
#ifdef MOE_CUDA_EMU
  std::printf("cuda:N are emulated on the CPU, with the emulator's checker (emu/README.md)\n");
#endif
  int rc = Catch::Session().run(argc, argv);
#ifdef MOE_CUDA_EMU
  if (argc == 1) {  // the whole suite ran: list the kernels it never launched, and emu-kernels.tsv
    int launched = 0, total = 0;
    std::FILE* tsv = std::fopen("emu-kernels.tsv", "w");  // for scripts/internal/register-budget.sh
    for (const moe_emu::KernelCoverage& k : moe_emu::kernel_coverage()) {
      ++total;
      if (k.launched)
        ++launched;
      else
        std::printf("never launched: %s\n", k.name.c_str());
      if (tsv)
        std::fprintf(tsv, "%s\t%d\t%u\t%zu\n", k.name.c_str(), k.launched ? 1 : 0, k.max_threads, k.max_dynamic_shared);
    }
    if (tsv) std::fclose(tsv);
    std::printf("kernel coverage: %d of %d __global__ instantiations launched\n", launched, total);
    const std::vector<std::string> unlaunched = moe_emu::unlaunched_kernels(MOE_SOURCE_DIR "/cuda");
    for (const std::string& k : unlaunched) std::printf("never launched (from the sources): %s\n", k.c_str());
    std::printf("kernel coverage: %zu __global__ definitions of cuda/ never launched\n", unlaunched.size());
    if ((launched != total || !unlaunched.empty()) && rc == 0) rc = 1;
  }
#endif
  return rc;
}
