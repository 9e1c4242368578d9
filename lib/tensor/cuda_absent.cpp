// cuda_runtime.h for builds without nvcc (the CPU-only build): no GPU is ever present, and anything
// that would touch one is a moe::Error saying so. Compiled only when MOE_WITH_CUDA is off. Covered by
// tests/unit/tensor_test.cpp ("a cuda device beyond the GPUs present") in CPU-only builds
// (scripts/test.sh --sanitize configures one).
#ifndef MOE_WITH_CUDA
#include "common/error.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
[[noreturn]] void no_cuda() { MOE_FAIL("this moe build has no CUDA support (nvcc was not found at configure time)"); }
}  // namespace
int device_count() { return 0; }
std::string no_gpu_reason() { return "this build has no CUDA support"; }
std::string device_name(int) { no_cuda(); }
int compute_capability(int) { no_cuda(); }
int multiprocessor_count(int) { no_cuda(); }
bool has_sm90a_code() { return false; }
void set_device(int) { no_cuda(); }
void* raw_malloc(size_t, int) { no_cuda(); }
void raw_free(void*, int) { no_cuda(); }
void note_tensor_memory(void*, size_t, bool) {}
size_t free_memory(int) { no_cuda(); }
void copy_host_to_device(void*, const void*, size_t, int) { no_cuda(); }
void copy_device_to_host(void*, const void*, size_t, int) { no_cuda(); }
void set_after_device_read(void (*)(int)) {}
void set_before_capture(void (*)(int)) {}
void begin_capture(int) { no_cuda(); }
void* end_capture(int) { no_cuda(); }
void launch_graph(void*, int) { no_cuda(); }
void destroy_graph(void*) {}
void copy_device_to_device(void*, const void*, size_t, int) { no_cuda(); }
void memset_zero(void*, size_t, int) { no_cuda(); }
void synchronize(int) { no_cuda(); }
float time_on_device_ms(int, const std::function<void()>&) { no_cuda(); }
std::vector<float> time_calls_on_device_ms(int, int, const std::function<void()>&, const std::function<void()>&) {
  no_cuda();
}
}  // namespace moe::cuda
#endif
