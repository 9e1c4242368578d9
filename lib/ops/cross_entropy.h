// Cross-entropy fused with log-softmax over the last axis, with fairseq's label smoothing.
//   lse_n = log sum_j exp(x_nj); nll = lse - x_nt; smooth = -sum_j logp_j = V*lse - sum_j x_nj
//   eps_i = eps/(V-1); loss_n = (1-eps-eps_i)*nll + eps_i*smooth   (0 where t == ignore_index)
// Backward (adds): dx_nj += dloss_n * (exp(x_nj - lse_n) - q_nj), q_nj = eps_i + [j==t](1-eps-eps_i).
// The forward saves lse (one float per row) so the backward reads the logits once more and never
// needs [N,V] log-probabilities. CPU reference in cross_entropy.cpp, CUDA in cuda/ops/cross_entropy.cu.
// Covered by tests/ops/cross_entropy_test.cpp and tests/gpu/cross_entropy_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing, int ignore_index);
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing, int ignore_index);
}  // namespace cpu
namespace cuda {
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing, int ignore_index);
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing, int ignore_index);
}  // namespace cuda

/// dtype of the loss and lse for `logits`: f64 for f64 logits (CPU gradient checks), else f32.
DType cross_entropy_loss_dtype(DType logits);

/// logits [..., V] (f32/f64 on the CPU; f32/bf16/f16 on CUDA), targets i32 [...] in [0, V) or
/// ignore_index; loss and lse [...] of cross_entropy_loss_dtype. Out-of-range targets: an error on
/// the CPU; on CUDA the row's loss is NaN and it takes no gradient (a device-side guard).
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing = 0.f, int ignore_index = -1);
/// dlogits += dloss[n] * (softmax(logits) - q), given the lse saved by the forward.
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing = 0.f, int ignore_index = -1);

/// Number of targets != ignore_index (copies the targets to the host: a device sync on a GPU).
int64_t count_non_ignored(const Tensor& targets, int ignore_index = -1);

}  // namespace moe
