// The few CUDA runtime services the device-agnostic code needs, as plain functions.
// Implemented in cuda/tensor/cuda_runtime.cu; a build without nvcc links lib/tensor/cuda_absent.cpp
// instead: there no device exists (device_count() is 0) and every device call is a moe::Error saying
// that this build has no CUDA support (callers check device_count() first, so users see that message
// only when they ask for a cuda:N device in such a build).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace moe::cuda {

/// Devices that answer; any error (no driver, no GPU) counts as none.
int device_count();
/// Why device_count() is 0 (e.g. the runtime's error for a driver older than the CUDA runtime this
/// build links), or "" when a GPU answered.
std::string no_gpu_reason();
std::string device_name(int device);
/// 10 major + minor: 80 for an A100, 90 for an H100 or H200 (the CUDA emulator's devices report 90).
int compute_capability(int device);
/// The device's streaming multiprocessors (132 on an H100 SXM or an H200), for grids sized to fill it.
int multiprocessor_count(int device);
/// Whether this build's kernels hold sm_90a code (wgmma, TMA): an architecture list with 90a, or the emulator.
bool has_sm90a_code();
void set_device(int device);
/// Raw allocation on a device; returns nullptr when the device is out of memory.
void* raw_malloc(size_t bytes, int device);
void raw_free(void* ptr, int device);
/// Which bytes of a raw block hold a live tensor (live) or no longer do: the caching allocator's
/// sub-allocations, for a memory checker (the CUDA emulator's finds accesses past a tensor's end
/// inside a cached block with it; compute-sanitizer would take NVTX memory regions). No-op on a GPU.
void note_tensor_memory(void* ptr, size_t bytes, bool live);
size_t free_memory(int device);
void copy_host_to_device(void* dst, const void* src, size_t bytes, int device);
/// Waits for the device's stream, copies, then runs the after-read hook (set_after_device_read).
void copy_device_to_host(void* dst, const void* src, size_t bytes, int device);
/// A function the host runs after each copy_device_to_host, when the device's stream has just been
/// waited for: ops' index-error check (lib/ops/index_errors.h), so that kernels never need a copy of
/// their own to report.
void set_after_device_read(void (*hook)(int device));
void copy_device_to_device(void* dst, const void* src, size_t bytes, int device);
void memset_zero(void* ptr, size_t bytes, int device);
/// Waits for all work queued on the device's stream.
void synchronize(int device);
/// Stream capture into a CUDA graph (tensor/cuda_graph.h uses these): from begin_capture on, the device's
/// stream records instead of running; end_capture returns the instantiated graph, which launch_graph
/// queues on the stream again, as often as asked; destroy_graph frees it.
void begin_capture(int device);
/// A function begin_capture runs on the device before its stream starts recording: set-up that queues
/// work once (ops' index-error flag, zeroed when first used) must run then, not be recorded into a graph
/// that never runs it or reruns it.
void set_before_capture(void (*hook)(int device));
void* end_capture(int device);
void launch_graph(void* graph, int device);
void destroy_graph(void* graph);
/// Milliseconds the device spends on `fn` (CUDA events around it on the device's stream).
float time_on_device_ms(int device, const std::function<void()>& fn);
/// Device milliseconds of each of `calls` runs of `fn` on the device's stream, each between its own
/// pair of CUDA events; `before` (may be empty) runs ahead of each start event and is not timed (e.g.
/// an L2 flush). Launches queue back to back: the host waits once, after the last stop event.
std::vector<float> time_calls_on_device_ms(int device, int calls, const std::function<void()>& fn,
                                           const std::function<void()>& before = {});

}  // namespace moe::cuda
