// CUDA implementation of lib/tensor/cuda_runtime.h and of the per-device context (context.h):
// device discovery that treats any error as "no GPU", raw memory, copies on the device's stream,
// the stream and cuBLAS handles created once per device, and CUDA-event timers (moe-bench).
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#ifdef MOE_CUDA_EMU
#include "moe_emu/control.h"
#endif

#include "common/context.h"
#include "common/cuda_check.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
struct DeviceContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t blas_lt = nullptr;
  void* lt_workspace = nullptr;
};
constexpr size_t kLtWorkspace = size_t(32) << 20;

/// Makes `device` this thread's current CUDA device (kernels launch on the current device, whatever
/// stream they name); cudaGetDevice only reads thread-local state, so this is cheap per launch.
void make_current(int device) {
  int current = -1;
  CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) CUDA_CHECK(cudaSetDevice(device));
}

/// The context of `device`, made current: every launch, copy and cuBLAS call reaches its stream or
/// handles through here, so work for cuda:1 runs on device 1 even after work for cuda:0.
DeviceContext& context(int device) {
  static std::mutex mutex;
  static std::vector<DeviceContext> contexts(64);
  std::lock_guard<std::mutex> lock(mutex);
  MOE_CHECK(device >= 0 && device < device_count(), "CUDA device ", device, " is not available (", device_count(),
            " found)");
  DeviceContext& c = contexts[device];
  make_current(device);
  if (!c.stream) CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  return c;
}
}  // namespace

namespace {
struct Discovery {
  int count = 0;
  std::string reason;  // why count is 0
};
const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery r;
    int n = 0;  // cudaGetDeviceCount leaves n untouched on failure (no driver): that means 0.
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      int runtime = 0, driver = 0;
      cudaRuntimeGetVersion(&runtime);
      cudaDriverGetVersion(&driver);  // 0 when no driver is installed
      auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
      r.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ", " + cudaGetErrorString(e) +
                 "; this build's CUDA runtime is " + version(runtime) + ", " +
                 (driver ? "the driver supports CUDA " + version(driver) : std::string("no CUDA driver found"));
      return r;
    }
    r.count = n;
    if (n == 0) r.reason = "the CUDA driver reports no device";
    return r;
  }();
  return d;
}
}  // namespace

int device_count() { return discovery().count; }

std::string no_gpu_reason() { return discovery().reason; }

std::string device_name(int device) {
  cudaDeviceProp p;
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return p.name;
}

namespace {
/// f(properties of `device`), computed once per device.
template <class F>
int device_property(int device, std::vector<int>& known, F f) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  MOE_CHECK(device >= 0 && device < device_count(), "CUDA device ", device, " is not available");
  if (!known[size_t(device)]) {
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    known[size_t(device)] = f(p);
  }
  return known[size_t(device)];
}
}  // namespace

int compute_capability(int device) {
  static std::vector<int> known(64, 0);
  return device_property(device, known, [](const cudaDeviceProp& p) { return 10 * p.major + p.minor; });
}

int multiprocessor_count(int device) {
  static std::vector<int> known(64, 0);
  return device_property(device, known, [](const cudaDeviceProp& p) { return p.multiProcessorCount; });
}

bool has_sm90a_code() {
#if defined(MOE_CUDA_EMU) || defined(MOE_CUDA_SM90A)
  return true;
#else
  return false;
#endif
}

void set_device(int device) { make_current(device); }

cudaStream_t stream(int device) { return context(device).stream; }

cublasHandle_t cublas(int device) {
  DeviceContext& c = context(device);
  if (!c.blas) {
    CUBLAS_CHECK(cublasCreate(&c.blas));
    CUBLAS_CHECK(cublasSetStream(c.blas, c.stream));
  }
  return c.blas;
}

cublasLtHandle_t cublas_lt(int device) {
  DeviceContext& c = context(device);
  if (!c.blas_lt) CUBLAS_CHECK(cublasLtCreate(&c.blas_lt));
  return c.blas_lt;
}

void* cublas_workspace(int device, size_t* bytes) {
  DeviceContext& c = context(device);
  if (!c.lt_workspace && cudaMalloc(&c.lt_workspace, kLtWorkspace) != cudaSuccess) {
    cudaGetLastError();  // clear the out-of-memory error
    c.lt_workspace = nullptr;
    throw OutOfMemory(detail::concat("out of memory on cuda:", device, ": cuBLASLt's workspace of ", kLtWorkspace >> 20,
                                     " MiB does not fit in the ", free_memory(device) >> 20, " MiB free"));
  }
  *bytes = kLtWorkspace;
  return c.lt_workspace;
}

void* raw_malloc(size_t bytes, int device) {
  CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free out-of-memory error
    return nullptr;
  }
  return p;
}

void raw_free(void* ptr, int device) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamSynchronize(stream(device)));
  CUDA_CHECK(cudaFree(ptr));
}

void note_tensor_memory(void* ptr, size_t bytes, bool live) {
#ifdef MOE_CUDA_EMU
  moe_emu::note_suballocation(ptr, bytes, live);
#else
  (void)ptr, (void)bytes, (void)live;  // a GPU has no checker to tell
#endif
}

size_t free_memory(int device) {
  CUDA_CHECK(cudaSetDevice(device));
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

void copy_host_to_device(void* dst, const void* src, size_t bytes, int device) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream(device)));
  CUDA_CHECK(cudaStreamSynchronize(stream(device)));  // the host buffer may go away after return
}

namespace {
std::atomic<void (*)(int)> g_after_read{nullptr};
}

void set_after_device_read(void (*hook)(int device)) { g_after_read = hook; }

void copy_device_to_host(void* dst, const void* src, size_t bytes, int device) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream(device)));
  CUDA_CHECK(cudaStreamSynchronize(stream(device)));
  if (auto hook = g_after_read.load()) hook(device);
}

void copy_device_to_device(void* dst, const void* src, size_t bytes, int device) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream(device)));
}

void memset_zero(void* ptr, size_t bytes, int device) { CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, stream(device))); }

void synchronize(int device) { CUDA_CHECK(cudaStreamSynchronize(stream(device))); }

namespace {
std::atomic<void (*)(int)> g_before_capture{nullptr};
}

void set_before_capture(void (*hook)(int device)) { g_before_capture = hook; }

void begin_capture(int device) {
  if (auto hook = g_before_capture.load()) hook(device);
  CUDA_CHECK(cudaStreamBeginCapture(stream(device), cudaStreamCaptureModeRelaxed));
}

void* end_capture(int device) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream(device), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(e);
  return exec;
}

void launch_graph(void* graph, int device) {
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream(device)));
}

void destroy_graph(void* graph) {
  if (graph) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

float time_on_device_ms(int device, const std::function<void()>& fn) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream(device)));
  fn();
  CUDA_CHECK(cudaEventRecord(stop, stream(device)));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms;
}

std::vector<float> time_calls_on_device_ms(int device, int calls, const std::function<void()>& fn,
                                           const std::function<void()>& before) {
  MOE_CHECK(calls >= 1, "time_calls_on_device_ms: calls = ", calls, " must be >= 1");
  const cudaStream_t s = stream(device);
  std::vector<cudaEvent_t> events(2 * static_cast<size_t>(calls), nullptr);
  auto destroy = [&] {
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
  };
  std::vector<float> ms(static_cast<size_t>(calls), 0.f);
  try {
    for (cudaEvent_t& e : events) CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < calls; ++i) {
      if (before) before();
      CUDA_CHECK(cudaEventRecord(events[2 * i], s));
      fn();
      CUDA_CHECK(cudaEventRecord(events[2 * i + 1], s));
    }
    CUDA_CHECK(cudaEventSynchronize(events.back()));
    for (int i = 0; i < calls; ++i) CUDA_CHECK(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]));
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  return ms;
}

}  // namespace moe::cuda
