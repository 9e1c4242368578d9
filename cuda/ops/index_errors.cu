// Host side of the out-of-range index flag (lib/ops/index_errors.h): per device, a 4 x u64 device flag
// and a pinned host copy. Index kernels only write the flag; the host reads it when it waits for the device
// anyway (after each copy_device_to_host: the loss of an update, a beam step's candidates), so that the ops
// themselves never copy to the host or wait (an MoE layer's forward and backward can be captured in a CUDA
// graph: tests/emu/moe_no_sync_test.cpp); the flag is made before a capture begins, never inside one.
// Covered by tests/gpu/gather_scatter_parity_test.cpp and tests/gpu/update_graph_test.cpp (a capture first).
#include <mutex>

#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/index_errors.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
struct FlagState {
  unsigned long long* dev = nullptr;
  unsigned long long* host = nullptr;  // pinned
  bool launched = false;               // an index kernel ran since the flag was last read
};
constexpr int kMaxDevices = 64;
std::mutex g_mutex;
FlagState g_state[kMaxDevices];

FlagState& state(int device) {
  MOE_CHECK(device >= 0 && device < kMaxDevices, "index errors: device index ", device, " out of range");
  FlagState& s = g_state[device];
  if (!s.dev) {
    int prev = 0;
    CUDA_CHECK(cudaGetDevice(&prev));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMalloc(&s.dev, 4 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemsetAsync(s.dev, 0, 4 * sizeof(unsigned long long), stream(device)));
    CUDA_CHECK(cudaMallocHost(&s.host, 4 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaSetDevice(prev));
  }
  return s;
}

/// The host has just waited for the device's stream: the flag's state is final for what ran so far.
void check_after_read(int device) { poll_index_errors(device); }
[[maybe_unused]] const bool registered = (set_after_device_read(&check_after_read), true);

/// A stream capture starts: the flag is made (and its zeroing queued) now, so that a capture whose index
/// kernels are the device's first does not record the zeroing instead of running it.
void make_before_capture(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  state(device);
}
[[maybe_unused]] const bool registered_capture = (set_before_capture(&make_before_capture), true);
}  // namespace

unsigned long long* index_error_flag(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return state(device).dev;
}

void after_index_launch(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  state(device).launched = true;
}

void poll_index_errors(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device < 0 || device >= kMaxDevices || !g_state[device].dev || !g_state[device].launched) return;
  FlagState& s = g_state[device];
  s.launched = false;
  CUDA_CHECK(cudaMemcpyAsync(s.host, s.dev, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream(device)));
  CUDA_CHECK(cudaStreamSynchronize(stream(device)));
  if (s.host[0] == 0) return;
  const unsigned long long op = s.host[1];
  const long long index = static_cast<long long>(s.host[2]), bound = static_cast<long long>(s.host[3]);
  s.host[0] = 0;
  CUDA_CHECK(cudaMemsetAsync(s.dev, 0, 4 * sizeof(unsigned long long), stream(device)));
  MOE_FAIL(index_op_name(static_cast<IndexOp>(op)), ": index ", index, " is out of range [0, ", bound,
           ") on cuda:", device, " (seen by an earlier kernel; the row was skipped or zero-filled)");
}

}  // namespace moe::cuda
