// CUDA emulator: the runtime API of emu/include/cuda_runtime.h and the device state of devices.h, but
// streams, events, copies and memsets (streams.cpp): devices, errors, memory. cudaFree and
// cudaFreeHost synchronise first, as CUDA's do; a bad pointer is an error naming what is wrong.
// Covered by tests/emu/checker_test.cpp and, through moe, by every test on the emulated device.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "devices.h"
#include "global_shadow.h"
#include "memory.h"
#include "queue.h"
#include "reports.h"

namespace moe_emu {
namespace {
thread_local int t_device = 0;
thread_local cudaError_t t_error = cudaSuccess;
thread_local cudaError_t t_message_code = cudaSuccess;
thread_local std::string t_message;
std::mutex g_mutex;
std::map<std::pair<int, const void*>, size_t> g_optin;
std::set<const CUstream_st*> g_streams;

/// An API call with a bad device pointer: reported like a checker finding, returned as an error.
cudaError_t bad_pointer(const char* call, const char* which, const void* p, size_t bytes, const std::string& problem) {
  char head[160];
  std::snprintf(head, sizeof(head), "%s: %s %p (%zu bytes) is ", call, which, p, bytes);
  return set_error(cudaErrorInvalidValue, publish_api_report(ReportKind::api_misuse, head + problem));
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

StreamId stream_id(cudaStream_t stream) { return stream ? stream->id : legacy_stream(t_device); }

void register_stream(cudaStream_t stream, bool live) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (live) g_streams.insert(stream);
  else g_streams.erase(stream);
}

size_t dynamic_shared_limit(int device, const void* kernel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_optin.find({device, kernel});
  return it == g_optin.end() ? kDefaultDynamicShared : it->second;
}

cudaError_t set_error(cudaError_t error, const std::string& message) {
  if (error == cudaSuccess) return error;
  t_error = error;
  return set_message(error, message);
}

cudaError_t set_message(cudaError_t error, const std::string& message) {
  if (error == cudaSuccess) return error;
  t_message_code = error;
  t_message = message;
  return error;
}

cudaError_t func_set_attribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || size_t(value) > kMaxSharedPerBlock)
    return set_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) +
                                                " bytes of dynamic shared memory exceed the " +
                                                std::to_string(kMaxSharedPerBlock) + " an sm_90 block can have");
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
cudaError_t cudaDeviceSynchronize() {
  if (capturing_any())
    return set_error(cudaErrorStreamCaptureUnsupported, "cudaDeviceSynchronize while a stream captures a CUDA graph");
  note_host_wait();
  synchronize_all();
  return take_async_error(true);
}
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
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
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
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    default: return "unknown error";
  }
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = t_error;
  t_error = cudaSuccess;
  return e != cudaSuccess ? e : take_async_error(true);
}
cudaError_t cudaPeekAtLastError() { return t_error != cudaSuccess ? t_error : take_async_error(false); }

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = device_allocate(bytes, t_device);
  return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* ptr) {
  synchronize_all();  // as CUDA's cudaFree: queued work may still use the memory
  if (!ptr || device_free(ptr)) return cudaSuccess;
  return bad_pointer("cudaFree", "pointer", ptr, 0, "not the start of a live device allocation");
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  *ptr = pinned_allocate(bytes);
  return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned) { return cudaMallocHost(ptr, bytes); }
cudaError_t cudaFreeHost(void* ptr) {
  synchronize_all();
  if (!ptr || pinned_free(ptr)) return cudaSuccess;
  return bad_pointer("cudaFreeHost", "pointer", ptr, 0, "not the start of a pinned host allocation");
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = device_memory_total();
  *free_bytes = *total_bytes - device_memory_used(t_device);
  return cudaSuccess;
}

