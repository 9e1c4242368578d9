// Element-wise unary functions y = f(x) and their derivatives, forward and backward.
//   relu: max(x,0)              d = [x>0]
//   gelu: x*Phi(x) (exact, erf) d = Phi(x) + x*phi(x)
//   tanh, sigmoid (d = y(1-y)), softplus: log(1+e^x) (d = sigmoid(x)), exp (d = y), log (d = 1/x),
//   sqrt (d = 1/(2y)), erf (d = 2/sqrt(pi) e^{-x^2}), normcdf Phi(x) (d = phi(x)), neg, square, abs
//   scale: alpha*x + beta (d = alpha)
// Backward adds dy * f'(x) into dx. CPU reference in lib/ops/unary.cpp, CUDA in cuda/ops/unary.cu.
// Covered by tests/ops/unary_test.cpp (values, finite differences) and tests/gpu/unary_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

enum class UnaryOp { relu, gelu, tanh, sigmoid, softplus, exp, log, sqrt, erf, normcdf, neg, square, abs, scale };
const char* unary_op_name(UnaryOp op);

namespace cpu {
void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha, float beta);
void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha);
}  // namespace cpu
namespace cuda {
void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha, float beta);
void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha);
}  // namespace cuda

/// y = f(x) (alpha, beta only used by `scale`); x and y have the same shape and dtype.
void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha = 1.f, float beta = 0.f);
/// dx += dy * f'(x), given x and y = f(x).
void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha = 1.f);
/// dst += src (same shape and dtype): the backward of `scale` with alpha 1.
inline void accumulate(Tensor& dst, const Tensor& src) { unary_backward(UnaryOp::scale, src, src, src, dst, 1.f); }

}  // namespace moe
