// The few CUDA runtime services the device-agnostic code needs, as plain functions.
// Implemented in cuda/tensor/cuda_runtime.cu; a CPU-only build links lib/tensor/cuda_stub.cpp
// instead, whose device_count() is 0 and whose other functions throw "built without CUDA".
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace moe::cuda {

/// Devices that answer; any error (no driver, no GPU) counts as none.
int device_count();
std::string device_name(int device);
void set_device(int device);
/// Raw allocation on a device; returns nullptr when the device is out of memory.
void* raw_malloc(size_t bytes, int device);
void raw_free(void* ptr, int device);
size_t free_memory(int device);
void copy_host_to_device(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_device(void* dst, const void* src, size_t bytes, int device);
void memset_zero(void* ptr, size_t bytes, int device);
/// Waits for all work queued on the device's stream.
void synchronize(int device);
/// Milliseconds the device spends on `fn` (CUDA events around it on the device's stream).
float time_on_device_ms(int device, const std::function<void()>& fn);

}  // namespace moe::cuda
