// CUDA emulator (emu/README.md): per-process device state shared by the runtime API (api.cpp,
// streams.cpp) and the launcher (scheduler.cpp): the emulated devices, each host thread's current
// device and sticky last error, streams (each with its queue's StreamId, queue.h), and the per-device
// kernel attributes (the opt-in dynamic shared memory).
#pragma once
#include <cstddef>
#include <string>

#include "cuda_runtime.h"
#include "queue.h"

struct CUstream_st {
  int device;
  moe_emu::StreamId id;
};

namespace moe_emu {

constexpr size_t kDefaultDynamicShared = 48 * 1024;
/// The largest opt-in shared memory per block of the emulated devices, which are sm_90 (227 KiB); that
/// kernels of sm_80 variants fit the 163 KiB of an A100 is checked from the nvcc build
/// (scripts/internal/kernel-sass.py).
constexpr size_t kMaxSharedPerBlock = 227 * 1024;

int emulated_device_count();
int current_device();
/// The device of a stream (nullptr: the current device's default stream); -1 for a destroyed stream.
int stream_device(cudaStream_t stream);
/// The queue of a live stream (nullptr: the legacy default stream of the current device).
StreamId stream_id(cudaStream_t stream);
size_t dynamic_shared_limit(int device, const void* kernel);
/// Sets the calling host thread's sticky error (kept until cudaGetLastError) and returns `error`;
/// `message` (may be empty) is what cudaGetErrorString returns for it.
cudaError_t set_error(cudaError_t error, const std::string& message = "");
/// Only the text cudaGetErrorString gives for `error` on this thread (errors of queued operations,
/// which reach the host through take_async_error, not through the sticky last error).
cudaError_t set_message(cudaError_t error, const std::string& message);
/// Counts a call that blocks the host until queued work has run (moe_emu::host_traffic; streams.cpp).
void note_host_wait();

}  // namespace moe_emu
