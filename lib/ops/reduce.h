// Reductions over one axis, viewed as x[outer, n, inner] -> y[outer, inner]:
//   sum, mean (sum/n), max, logsumexp m + log sum exp(x - m), var (population: mean (x - mean)^2).
// Backward ADDS into dx: sum dy, mean dy/n, max dy to the first maximal element, logsumexp
// dy * exp(x - y), var dy * 2 (x - mean) / n. sum_to_shape(x, shape, out) adds x summed over the
// axes where `shape` is 1 or missing (the gradient of broadcasting).
// CPU reference in lib/ops/reduce.cpp, CUDA in cuda/ops/reduce.cu.
// Covered by tests/ops/reduce_test.cpp and tests/gpu/reduce_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

enum class ReduceOp { sum, mean, max, logsumexp, var };
const char* reduce_op_name(ReduceOp op);

namespace cpu {
void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out);
void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx);
void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out);
}  // namespace cpu
namespace cuda {
void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out);
void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx);
void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out);
}  // namespace cuda

/// The output shape of a reduction over `axis` (dropped, or kept as size 1).
Shape reduced_shape(const Shape& x, int axis, bool keepdim);

/// out = op over `axis` of x; out has reduced_shape(x, axis, keepdim) for either keepdim.
/// An axis of size 0 gives 0 for sum and is an error for the other ops.
void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out);
/// dx += d out / dx * dout, given x and out = op(x).
void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx);
/// out += x summed down to `shape` (which must broadcast to x.shape(); out.shape() == shape).
void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out);

}  // namespace moe
