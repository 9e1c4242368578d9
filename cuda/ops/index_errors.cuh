// Device side of lib/ops/index_errors.h: records the first out-of-range index a kernel meets.
// Covered by tests/gpu/gather_scatter_parity_test.cpp.
#pragma once
#include "ops/index_errors.h"

namespace moe::cuda {

__device__ __forceinline__ void record_bad_index(unsigned long long* flag, IndexOp op, long long index,
                                                 long long bound) {
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) {
    flag[1] = static_cast<unsigned long long>(op);
    flag[2] = static_cast<unsigned long long>(index);
    flag[3] = static_cast<unsigned long long>(bound);
  }
}

}  // namespace moe::cuda
