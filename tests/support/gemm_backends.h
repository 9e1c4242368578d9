// Test helpers for the CPU GEMM backends (ops/cpu_gemm.h): the backends this build has, and a guard that
// restores the process's backend when a test that switches it ends. Used by tests/ops/cpu_gemm_test.cpp and
// tests/ops/int8_gemm_test.cpp.
#pragma once
#include <vector>

#include "ops/cpu_gemm.h"

namespace moe::test {

inline std::vector<CpuGemmBackend> gemm_backends() {
  std::vector<CpuGemmBackend> b{CpuGemmBackend::openblas};
  if (onednn_built()) b.insert(b.end(), {CpuGemmBackend::onednn, CpuGemmBackend::by_rows});
  return b;
}

struct RestoreGemmBackend {
  CpuGemmBackend saved = cpu_gemm_backend();
  ~RestoreGemmBackend() { set_cpu_gemm_backend(saved); }
};

}  // namespace moe::test
