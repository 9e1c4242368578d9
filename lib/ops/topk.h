// Top-k along the last axis: x [rows, n] -> values [rows, k] (descending) and indices i32 [rows, k].
// Order: larger value first; equal values by the lower index; NaN ranks above +inf; -0 == +0.
// Backward: dx[r, indices[r, j]] += dvalues[r, j] (indices of a row are distinct, so no races).
// CPU reference in lib/ops/topk.cpp, CUDA in cuda/ops/topk.cu (per-thread top-K lists merged by
// warp/block arg-max rounds). Covered by tests/ops/topk_test.cpp and tests/gpu/topk_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void topk_forward(const Tensor& x, Tensor& values, Tensor& indices);
void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx);
}  // namespace cpu
namespace cuda {
void topk_forward(const Tensor& x, Tensor& values, Tensor& indices);
void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx);
}  // namespace cuda

/// values (x's dtype) and indices (i32) of shape x.shape() with the last axis replaced by k,
/// 1 <= k <= x.shape().last(); k is taken from values' last axis.
void topk_forward(const Tensor& x, Tensor& values, Tensor& indices);
/// dx += scatter of dvalues to the positions in indices (along the last axis).
void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx);

}  // namespace moe
