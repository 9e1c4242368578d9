// Softmax and log-softmax over the last axis, with an optional u8 keep-mask (1 keeps, 0 masks).
//   y_j = exp(x_j - m) / sum_k exp(x_k - m) over kept k (m = max of kept x); masked y_j = 0
//   log: y_j = x_j - m - log(sum_k exp(x_k - m)); masked y_j = -inf. Fully masked rows: all 0 / all -inf.
// Backward (adds): softmax dx += y*(dy - sum(dy*y)); log-softmax dx += dy - exp(y)*sum(dy), where
// entries with y == -inf (masked) take no gradient and are left out of sum(dy). CPU reference in
// softmax.cpp, CUDA in cuda/ops/softmax.cu. Covered by tests/ops/softmax_test.cpp and
// tests/gpu/softmax_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log);
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log);
}  // namespace cpu
namespace cuda {
void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log);
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log);
}  // namespace cuda

/// y = (log-)softmax(x) over the last axis. `mask` is undefined (no mask) or u8 with x's shape or
/// [1.., cols] (one row for every row); y has x's shape and dtype.
void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log = false);
/// dx += the gradient through (log-)softmax, given its output y and the output gradient dy.
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log = false);

/// Row stride of a softmax mask for input `x` (x.shape().last() or 0 for a broadcast row);
/// checks dtype, device and shape and names the op in the error. Shared by CPU and CUDA.
int64_t softmax_mask_stride(const char* op, const Tensor& x, const Tensor& mask);

}  // namespace moe
