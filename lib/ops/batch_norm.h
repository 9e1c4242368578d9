// Batch normalisation of [..., C] inputs: each column c is normalised over the N rows.
//   training: mu_c = mean_n x, var_c = mean_n (x-mu)^2 (biased), rstd = 1/sqrt(var+eps), and in place
//     running_mean = (1-m)*running_mean + m*mu, running_var = (1-m)*running_var + m*var*N/(N-1) (unbiased)
//   eval: mu = running_mean, rstd = 1/sqrt(running_var + eps).   y = (x-mu)*rstd*gamma + beta
// The forward saves the mu and rstd it used. Backward (adds), g = dy*gamma:
//   training dx += rstd*(g - mean_n g - xhat*mean_n(g*xhat)); eval dx += rstd*g;
//   dgamma += sum_n dy*xhat; dbeta += sum_n dy.
// CPU reference in batch_norm.cpp, CUDA in cuda/ops/batch_norm.cu. Covered by
// tests/ops/batch_norm_test.cpp and tests/gpu/batch_norm_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd);
void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);
}  // namespace cpu
namespace cuda {
void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd);
void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);
}  // namespace cuda

/// x [..., C]; gamma, beta [C] or undefined (f32 or x's dtype); running_mean/var [C] of
/// norm_stat_dtype(x) (f32; f64 or f32 for f64 x), updated in place in training (may be undefined there:
/// no update; required in eval); y like x; mean, rstd [C] of norm_stat_dtype(x) receive the
/// statistics used. Training needs at least 2 rows.
void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd);
/// Adds into dx, dgamma, dbeta (any may be undefined), through the batch statistics when `training`.
void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

}  // namespace moe
