// Out-of-range indices seen by CUDA kernels (embedding, index_select, index_add, gather_last,
// scatter_add_last). A kernel cannot throw: it skips (or zero-fills) the bad index and records the
// first one in a per-device flag. The flag is copied to pinned host memory after each launch and
// polled without blocking at the next launch; check_index_errors() waits and throws at once.
// CPU kernels check indices before touching memory and throw directly.
// Covered by tests/gpu/gather_scatter_parity_test.cpp (out-of-range case).
#pragma once
#include "tensor/tensor.h"

namespace moe {

enum class IndexOp : int { embedding = 1, index_select, index_add, gather_last, scatter_add_last };
const char* index_op_name(IndexOp op);

/// Throws moe::Error naming the op, the index and the bound if a kernel on `device` met an
/// out-of-range index since the last check (waits for the device's stream). No-op on the CPU.
void check_index_errors(Device device);

namespace cuda {
/// The device flag (4 x u64: seen, op, index, bound) that kernels on `device` write to.
unsigned long long* index_error_flag(int device);
/// Throws if an earlier launch recorded a bad index (blocking when `wait`, else only if the last
/// copy of the flag has already arrived).
void poll_index_errors(int device, bool wait);
/// Enqueues the copy of the flag to the host after a launch on the device's stream.
void after_index_launch(int device);
}  // namespace cuda

}  // namespace moe
