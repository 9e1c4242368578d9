// Grouped GEMM for mixture-of-experts dispatch. The rows of x [N, K] are sorted by expert and
// offsets (i32 [E+1], offsets[0] = 0, offsets[E] = N, non-decreasing; segments may be empty)
// delimit expert e's rows. Forward: out[rows of e] = act(alpha * x[rows of e] @ w[e] + bias[e]),
// w [E, K, M] (or [E, M, K] with trans_w, using w[e]^T), with the optional epilogue (alpha, bias
// [E, M], act none or relu) applied to the f32 product before it is stored (accumulate adds the
// result to out). Backward: dx[rows of e] += alpha * dout[rows of e] @ op(w[e])^T,
// dw[e] += alpha * x[rows of e]^T @ dout[rows of e] (transposed when trans_w); the epilogue's own
// gradient: dz = dout * (out > 0) with relu (else dout), dbias[e] += column sums of dz over e's rows.
// CPU: BLAS per expert (offsets copied to the host); CUDA: one tiled kernel launch per product (the
// epilogue in its store), and one segment-sum launch for dz / dbias, all reading offsets on the device.
// Covered by tests/ops/grouped_gemm_test.cpp and tests/gpu/grouped_gemm_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

/// The activation of the grouped GEMM's epilogue.
enum class GroupedActivation { none, relu };

/// out = act(alpha * product + bias[expert]); bias [E, M] in x's dtype, or undefined.
struct GroupedEpilogue {
  float alpha = 1.f;
  Tensor bias;
  GroupedActivation act = GroupedActivation::none;
};

namespace cpu {
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate, float alpha, const Tensor& bias, GroupedActivation act);
void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w,
                              float alpha);
void grouped_gemm_epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                Tensor& dz, Tensor& dbias);
}  // namespace cpu
namespace cuda {
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate, float alpha, const Tensor& bias, GroupedActivation act);
void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w,
                              float alpha);
void grouped_gemm_epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                Tensor& dz, Tensor& dbias);
}  // namespace cuda

/// out [N, M] = per-expert act(alpha * x @ op(w[e]) + bias[e]); with accumulate, out += instead of out =.
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w = false,
                          bool accumulate = false, const GroupedEpilogue& epilogue = {});
/// dx += alpha * dout @ op(w[e])^T and dw += alpha * per-expert x^T @ dout (each skipped when undefined).
void grouped_gemm_backward(const Tensor& x, const Tensor& w, const Tensor& offsets, const Tensor& dout, Tensor& dx,
                           Tensor& dw, bool trans_w = false, float alpha = 1.f);
/// The epilogue's gradient from the saved output: with relu dz = dout * (out > 0) (dz [N, M] is
/// overwritten; undefined when act is none: dz is dout then), and dbias [E, M] += per-expert column
/// sums of dz (skipped when undefined).
void grouped_gemm_epilogue_backward(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                    Tensor& dz, Tensor& dbias);

}  // namespace moe
