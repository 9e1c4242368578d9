// device.h implementation: parsing device names and asking the runtime how many GPUs answer.
#include "tensor/device.h"

#include "common/error.h"
#include "tensor/cuda_runtime.h"

namespace moe {

bool built_with_cuda() {
#ifdef MOE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int gpu_count() {
  static const int count = cuda::device_count();
  return count;
}

bool has_gpu() { return gpu_count() > 0; }

bool cuda_emulated() {
#ifdef MOE_CUDA_EMU
  return true;
#else
  return false;
#endif
}

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "auto") return has_gpu() && !cuda_emulated() ? cuda(0) : cpu();
  for (const std::string prefix : {"cuda", "gpu"}) {
    if (text.rfind(prefix, 0) != 0) continue;
    std::string rest = text.substr(prefix.size());
    if (!rest.empty() && rest[0] == ':') rest = rest.substr(1);
    int index = 0;
    if (!rest.empty()) {
      MOE_CHECK(rest.find_first_not_of("0123456789") == std::string::npos, "bad device '", text,
                "' (expected cpu, cuda, cuda:N, gpuN or auto)");
      index = std::stoi(rest);
    }
    return cuda(index);
  }
  MOE_FAIL("bad device '", text, "' (expected cpu, cuda, cuda:N, gpuN or auto)");
}

}  // namespace moe
