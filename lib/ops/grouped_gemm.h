// Grouped GEMM for mixture-of-experts dispatch. The rows of x [N, K] are sorted by expert and
// offsets (i32 [E+1], offsets[0] = 0, offsets[E] = N, non-decreasing; segments may be empty)
// delimit expert e's rows. Forward: out[rows of e] = x[rows of e] @ w[e], w [E, K, M] (or
// [E, M, K] with trans_w, using w[e]^T). Backward: dx[rows of e] += dout[rows of e] @ op(w[e])^T,
// dw[e] += x[rows of e]^T @ dout[rows of e] (transposed when trans_w).
// CPU: BLAS per expert (offsets copied to the host); CUDA: one tiled kernel launch per product,
// reading offsets on the device. Covered by tests/ops/grouped_gemm_test.cpp and
// tests/gpu/grouped_gemm_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate);
void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w);
}  // namespace cpu
namespace cuda {
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate);
void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w);
}  // namespace cuda

/// out [N, M] = per-expert x @ op(w[e]); with accumulate, out += instead of out =.
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w = false,
                          bool accumulate = false);
/// dx += dout @ op(w[e])^T and dw += per-expert x^T @ dout (each skipped when undefined).
void grouped_gemm_backward(const Tensor& x, const Tensor& w, const Tensor& offsets, const Tensor& dout, Tensor& dx,
                           Tensor& dw, bool trans_w = false);

}  // namespace moe
