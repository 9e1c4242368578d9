// The out-of-memory error of a device, one text for every place that runs out: the caching allocator
// (allocator.cpp) and a library that allocates on its own, such as oneDNN's GEMM packing buffers
// (ops/cpu_gemm.cpp). It names the request, the bytes in use by tensors, reserved and the peak, and the
// limit that applies (host_limits.h on the CPU, the free memory of a GPU). Covered by
// tests/unit/host_arena_test.cpp (both texts) and tests/scripts/memory_limits.sh (the model that does not
// fit under ulimit -v, whichever of the two runs out first).
#pragma once
#include <cstddef>
#include <string>

#include "tensor/allocator.h"

namespace moe {

/// "out of memory on DEVICE: REQUEST failed with ... in use by tensors and ... reserved (peak ...; LIMIT)".
std::string out_of_memory_text(Device device, const std::string& request, const AllocatorStats& stats);

/// Throws OutOfMemory with out_of_memory_text and the device allocator's figures now.
[[noreturn]] void throw_out_of_memory(Device device, const std::string& request);

}  // namespace moe
