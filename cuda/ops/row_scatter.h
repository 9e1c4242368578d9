// Deterministic row scatter-add on the GPU, shared by the embedding backward and index_add:
//   dst[idx[m], :] += scale * src[m, :]
// implemented in cuda/ops/embedding.cu (cub radix sort of (idx, m), then ordered sums per run of
// equal indices; no atomics). Covered by tests/gpu/embedding_parity_test.cpp and
// tests/gpu/gather_scatter_parity_test.cpp.
#pragma once
#include "ops/index_errors.h"
#include "tensor/tensor.h"

namespace moe::cuda {

/// dst [N, ...] (rows of R elements), idx i32 [M], src [M, ...] with rows of R; f32/bf16/f16.
void sorted_row_add(const Tensor& idx, const Tensor& src, Tensor& dst, float scale, IndexOp op);

}  // namespace moe::cuda
