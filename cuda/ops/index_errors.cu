// Host side of the out-of-range index flag (lib/ops/index_errors.h): per device, a 4 x u64 device
// flag, a pinned host copy and an event marking when the copy has landed. Polling never blocks
// unless asked to. Covered by tests/gpu/gather_scatter_parity_test.cpp.
#include <mutex>

#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/index_errors.h"

namespace moe::cuda {
namespace {
struct FlagState {
  unsigned long long* dev = nullptr;
  unsigned long long* host = nullptr;  // pinned
  cudaEvent_t copied = nullptr;
  bool pending = false;
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
    s.host[0] = 0;
    CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    CUDA_CHECK(cudaSetDevice(prev));
  }
  return s;
}
}  // namespace

unsigned long long* index_error_flag(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return state(device).dev;
}

void after_index_launch(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  FlagState& s = state(device);
  CUDA_CHECK(cudaMemcpyAsync(s.host, s.dev, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream(device)));
  CUDA_CHECK(cudaEventRecord(s.copied, stream(device)));
  s.pending = true;
}

void poll_index_errors(int device, bool wait) {
  std::lock_guard<std::mutex> lock(g_mutex);
  FlagState& s = state(device);
  if (!s.pending) return;
  if (wait) {
    CUDA_CHECK(cudaEventSynchronize(s.copied));
  } else {
    const cudaError_t q = cudaEventQuery(s.copied);
    if (q == cudaErrorNotReady) return;
    CUDA_CHECK(q);
  }
  s.pending = false;
  if (s.host[0] == 0) return;
  const unsigned long long op = s.host[1];
  const long long index = static_cast<long long>(s.host[2]), bound = static_cast<long long>(s.host[3]);
  s.host[0] = 0;
  CUDA_CHECK(cudaMemsetAsync(s.dev, 0, 4 * sizeof(unsigned long long), stream(device)));
  MOE_FAIL(index_op_name(static_cast<IndexOp>(op)), ": index ", index, " is out of range [0, ", bound,
           ") on cuda:", device, " (seen by an earlier kernel; the row was skipped or zero-filled)");
}

}  // namespace moe::cuda
