// main() of the GPU parity executable: exits 77 ("skipped" under ctest) when no GPU answers,
// so a CUDA build on a machine without a GPU reports the suite as Skipped, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "tensor/device.h"

int main(int argc, char** argv) {
  if (!moe::built_with_cuda() || !moe::has_gpu()) {
    std::printf("no GPU available (CUDA %s): skipping the GPU parity tests\n",
                moe::built_with_cuda() ? "built in" : "not built in");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
