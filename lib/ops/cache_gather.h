// The keys (or values) a decoding cache's row table names, copied into fresh storage (lib/layers/kv_cache.h):
//   out[i, j] = store[rows[i, j], j]   for i < N, j < t,
// for store [R, C, ...], rows i32 [N, t] (t <= C, entries in [0, R)) and out [N, C', ...] (C' >= t; its
// columns from t on are left as they were). Any dtype (bytes move unchanged). The cache compacts itself with it
// when its storage must grow or most of its rows are no longer named.
// CPU here, CUDA in cuda/ops/cache_gather.cu. Covered by tests/ops/cache_gather_test.cpp and
// tests/gpu/cache_gather_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out);
}  // namespace cpu
namespace cuda {
void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out);
}  // namespace cuda

/// The checked entry point: errors name cache_gather, the shapes and (on the CPU) any row out of range.
void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out);

}  // namespace moe
