// Helpers of the emulator's tests (tests/emu/*_test.cpp): where a marked line of the test kernels is,
// whether the checker's reports hold one of a kind at a place, and zeroed device buffers.
#pragma once
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <fstream>
#include <string>
#include <vector>

#include "moe_emu/control.h"

namespace moe::emu_test {

/// "tests/emu/FILE:LINE" of the line marked "// @marker" in one of the test kernel files.
inline std::string at(const std::string& marker) {
  for (const char* file : {"bad_kernels.cu", "blind_spot_kernels.cu", "async_bad_kernels.cu"}) {
    std::ifstream in(std::string(MOE_SOURCE_DIR) + "/tests/emu/" + file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const size_t p = line.find("// @" + marker);
      if (p != std::string::npos && (p + 4 + marker.size() == line.size() || line[p + 4 + marker.size()] == ' '))
        return std::string("tests/emu/") + file + ":" + std::to_string(n);
    }
  }
  FAIL("no line marked @" << marker);
  return "";
}

inline bool has(const std::vector<moe_emu::Report>& reports, const std::string& kind, const std::string& where,
                const std::string& also = "") {
  for (const auto& r : reports)
    if (r.kind == kind && r.text.find(where) != std::string::npos && r.text.find(also) != std::string::npos) return true;
  return false;
}

inline std::string all(const std::vector<moe_emu::Report>& reports) {
  std::string s;
  for (const auto& r : reports) s += r.text + "\n";
  return s;
}

/// n zeroed elements of device memory on `device` (the current device stays cuda:0). The memset runs on
/// the legacy default stream: synchronised here, so that a non-blocking stream may use the buffer.
template <class T>
T* device_buffer(size_t n, int device = 0) {
  cudaSetDevice(device);
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemset(p, 0, n * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaSetDevice(0);
  return static_cast<T*>(p);
}

}  // namespace moe::emu_test
