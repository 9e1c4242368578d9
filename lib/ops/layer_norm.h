// Layer normalisation over the last axis (d elements per row):
//   mu = mean(x), var = mean((x-mu)^2), rstd = 1/sqrt(var+eps), xhat = (x-mu)*rstd, y = xhat*gamma + beta
// (gamma/beta optional: 1 and 0). The forward saves mu and rstd per row. Backward (adds):
//   g = dy*gamma; dx += rstd*(g - mean(g) - xhat*mean(g*xhat)); dgamma += sum_rows dy*xhat; dbeta += sum_rows dy
// CPU reference in layer_norm.cpp, CUDA in cuda/ops/layer_norm.cu. Covered by
// tests/ops/layer_norm_test.cpp and tests/gpu/layer_norm_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps);
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta);
}  // namespace cpu
namespace cuda {
void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps);
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta);
}  // namespace cuda

/// dtype of saved statistics (mean, rstd) for input dtype `x`: f64 for f64 (CPU gradient checks), else f32.
DType norm_stat_dtype(DType x);

/// x [..., d]; gamma, beta [d] or undefined, of x's dtype or f32 (masters with bf16/f16 x); y like x;
/// mean and rstd [rows] of norm_stat_dtype(x).
void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps = 1e-5f);
/// Adds into dx (like x), dgamma and dbeta (like gamma / beta); any of them may be undefined (not wanted).
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta);

/// Shared argument check: an optional per-feature parameter `p` ([d], x's dtype or f32, x's device).
void check_norm_param(const char* op, const char* what, const Tensor& p, const Tensor& x, int64_t d);

}  // namespace moe
