// The feed-forward block's element-wise middle as one op: for x [rows, n] (the GEMM x W1 without
// its bias), bias b [n], activation f (relu or gelu) and dropout probability p,
//   z = x + b,   y = f(z) * m / (1 - p),   m_ij = [philox_uniform(seed, rng_stream, i n + j) >= p]
// (the mask of ops/dropout.h, so it equals dropout(f(linear(...))) bit for bit), and backward
//   dz = dy * m / (1 - p) * f'(z),   dx += dz,   db += sum over rows of dz.
// One pass over memory each way instead of three (bias, activation, dropout) forward and three
// backward (dropout, activation, bias column sums); the mask is recomputed, z is never stored.
// p = 0 is bias + activation. CPU in lib/ops/bias_act_dropout.cpp, CUDA in cuda/ops/bias_act_dropout.cu.
// Covered by tests/ops/bias_act_dropout_test.cpp (bitwise equal to the unfused ops, finite
// differences) and tests/gpu/bias_act_dropout_parity_test.cpp.
#pragma once
#include <cstdint>

#include "ops/unary.h"
#include "tensor/tensor.h"

namespace moe {

/// Dropout as the fused op applies it: the probability and the stream of one node.
struct DropoutMask {
  float p = 0.f;
  uint64_t seed = 0, rng_stream = 0;
};

namespace cpu {
void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y);
void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias);
}  // namespace cpu
namespace cuda {
void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y);
void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias);
}  // namespace cuda

/// y = act(x + bias) * mask / (1 - p); act is relu or gelu; x [..., n], bias [n], y as x.
void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y);
/// dx += dz and dbias += column sums of dz, dz = dy * mask / (1 - p) * act'(x + bias); either output may be null.
void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias);

}  // namespace moe
