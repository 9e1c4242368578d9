// Out-of-range indices seen by CUDA kernels (embedding, index_select, index_add, gather_last,
// scatter_add_last). A kernel cannot throw: it skips (or zero-fills) the bad index and records the
// first one in a per-device flag. The host reads the flag only when it waits for the device anyway: after
// every copy of a tensor to the host (the update's loss, a beam step's scores), where a bad index raises
// moe::Error; check_index_errors() reads it at once. The ops themselves never copy to the host.
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
/// Throws if a launch since the last check recorded a bad index (waits for the device's stream when an
/// index kernel ran since then).
void poll_index_errors(int device);
/// Notes that an index kernel was queued on the device (its flag is then read at the next check).
void after_index_launch(int device);
}  // namespace cuda

}  // namespace moe
