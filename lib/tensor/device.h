// Device: where a tensor lives (the CPU or CUDA device n), parsing "cpu", "cuda", "cuda:1", "gpu1".
// Covered by tests/unit/tensor_test.cpp ("device").
#pragma once
#include <ostream>
#include <string>

namespace moe {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  /// "cpu", "cuda", "cuda:N", "gpu", "gpuN"; "auto" = cuda:0 when a GPU is present (not the CUDA
  /// emulator's), else cpu.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

/// True when CUDA support was compiled in and at least one CUDA device answers at run time (a GPU,
/// or in a MOE_CUDA_EMU build the CUDA emulator's devices).
bool has_gpu();
/// Number of usable CUDA devices (0 without a driver, a GPU, or CUDA support in this build).
int gpu_count();
/// True in a build for the CUDA emulator (emu/): the cuda devices run on the CPU, about a thousand
/// times slower than a GPU, so "auto" does not choose them.
bool cuda_emulated();
/// True when this build contains the CUDA kernels (nvcc was found at configure time).
bool built_with_cuda();

}  // namespace moe
