// CUDA emulator: the runtime API of emu/include/cuda_runtime.h and the device state of devices.h.
// Streams are synchronous, events hold host times, copies and memsets check their device pointers
// against the allocation table (a bad pointer is an error naming what is wrong, not a crash).
// Covered by tests/emu/checker_test.cpp and, through moe, by every test on the emulated device.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "devices.h"
#include "memory.h"
#include "reports.h"

struct CUevent_st {
  double ms = 0;
  bool recorded = false, timing = true;
};

namespace moe_emu {
namespace {
thread_local int t_device = 0;
thread_local cudaError_t t_error = cudaSuccess;
thread_local cudaError_t t_message_code = cudaSuccess;
thread_local std::string t_message;
std::mutex g_mutex;
std::map<std::pair<int, const void*>, size_t> g_optin;
std::set<const CUstream_st*> g_streams;

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/// An API call with a bad device pointer: reported like a checker finding, returned as an error.
cudaError_t bad_pointer(const char* call, const char* which, const void* p, size_t bytes, const std::string& problem) {
  char head[160];
  std::snprintf(head, sizeof(head), "%s: %s %p (%zu bytes) is ", call, which, p, bytes);
  return set_error(cudaErrorInvalidValue, publish_api_report(ReportKind::api_misuse, head + problem));
}

/// Checks [p, p + bytes) when it must be (or, for cudaMemcpyDefault, may be) device memory.
bool device_range_ok(const char* call, const char* which, const void* p, size_t bytes, bool required) {
  if (bytes == 0) return true;
  const Located at = locate(reinterpret_cast<uintptr_t>(p), bytes);
  if (at.ok || (!required && at.problem == "not in any device allocation")) return true;
  bad_pointer(call, which, p, bytes, at.problem);
  return false;
}
}  // namespace

int emulated_device_count() {
  static const int n = [] {
    const char* v = std::getenv("MOE_EMU_DEVICES");
    const int k = v ? std::atoi(v) : 2;
    return k < 0 ? 0 : k > 64 ? 64 : k;
  }();
  return n;
}

int current_device() { return t_device; }

int stream_device(cudaStream_t stream) {
  if (!stream) return t_device;
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_streams.count(stream) ? stream->device : -1;
}

size_t dynamic_shared_limit(int device, const void* kernel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_optin.find({device, kernel});
  return it == g_optin.end() ? kDefaultDynamicShared : it->second;
}

cudaError_t set_error(cudaError_t error, const std::string& message) {
  if (error == cudaSuccess) return error;
  t_error = error;
  t_message_code = error;
  t_message = message;
  return error;
}

cudaError_t func_set_attribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || size_t(value) > kMaxSharedPerBlock)
    return set_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) +
                                                " bytes of dynamic shared memory exceed the " +
                                                std::to_string(kMaxSharedPerBlock) + " an sm_80 block can have");
  std::lock_guard<std::mutex> lock(g_mutex);
  g_optin[{t_device, kernel}] = size_t(value);
  return cudaSuccess;
}

}  // namespace moe_emu

using namespace moe_emu;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = emulated_device_count();
  return *count ? cudaSuccess : set_error(cudaErrorNoDevice);
}
cudaError_t cudaGetDevice(int* device) {
  *device = t_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emulated_device_count()) return set_error(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device < 0 || device >= emulated_device_count()) return set_error(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof(p->name), "moe CUDA emulator (CPU), device %d", device);
  p->totalGlobalMem = device_memory_total();
  p->sharedMemPerBlock = kDefaultDynamicShared;
  p->sharedMemPerBlockOptin = kMaxSharedPerBlock;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->multiProcessorCount = 132;
  p->major = 9, p->minor = 0;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorAssert: return "cudaErrorAssert";
    case cudaErrorIllegalInstruction: return "cudaErrorIllegalInstruction";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  if (e == t_message_code && !t_message.empty()) return t_message.c_str();
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "unknown error";
  }
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = t_error;
  t_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return t_error; }

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new CUstream_st{t_device};
  std::lock_guard<std::mutex> lock(g_mutex);
  g_streams.insert(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!stream || !g_streams.erase(stream)) return set_error(cudaErrorInvalidResourceHandle);
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return stream_device(stream) < 0 ? set_error(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  return stream_device(stream) < 0 || !event ? set_error(cudaErrorInvalidResourceHandle) : cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = device_allocate(bytes, t_device);
  return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* ptr) {
  if (!ptr || device_free(ptr)) return cudaSuccess;
  return bad_pointer("cudaFree", "pointer", ptr, 0, "not the start of a live device allocation");
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  *ptr = pinned_allocate(bytes);
  return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned) { return cudaMallocHost(ptr, bytes); }
cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr || pinned_free(ptr)) return cudaSuccess;
  return bad_pointer("cudaFreeHost", "pointer", ptr, 0, "not the start of a pinned host allocation");
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = device_memory_total();
  *free_bytes = *total_bytes - device_memory_used(t_device);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (!device_range_ok("cudaMemcpy", "destination", dst, bytes, dst_dev) ||
      !device_range_ok("cudaMemcpy", "source", src, bytes, src_dev))
    return cudaErrorInvalidValue;
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  if (!device_range_ok("cudaMemset", "destination", ptr, bytes, true)) return cudaErrorInvalidValue;
  if (bytes) std::memset(ptr, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes) { return cudaMemsetAsync(ptr, value, bytes, nullptr); }

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  *event = new CUevent_st;
  (*event)->timing = !(flags & cudaEventDisableTiming);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  event->ms = now_ms();
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return event ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t event) { return event ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle); }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded || !start->timing || !end->timing)
    return set_error(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}
