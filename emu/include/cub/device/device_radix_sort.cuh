// CUDA emulator (emu/README.md): cub::DeviceRadixSort::SortPairs for the key and value types moe
// sorts (i32 keys and values). The same two-call protocol as cub (a size query with a null
// temporary buffer, then the sort), the same rules (no buffer overlaps another) and the same result
// (stable, ascending over bits [begin, end)), queued on the stream and computed on the host over the
// device buffers, each checked against the allocation table and the device-memory shadow.
#pragma once
#include <cstddef>
#include <source_location>

#include "cuda_runtime.h"

namespace cub {
struct DeviceRadixSort {
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const int* keys_in, int* keys_out,
                               const int* values_in, int* values_out, int n, int begin_bit = 0,
                               int end_bit = int(sizeof(int) * 8), cudaStream_t stream = nullptr,
                               std::source_location site = std::source_location::current());
};
}  // namespace cub
