// Graph node for grouped_matmul: forward grouped_gemm_forward with the fused epilogue
// act(alpha * x @ op(w[e]) + bias[e]); backward grouped_gemm_epilogue_backward (dz = dout * (out > 0)
// with relu, dbias[e] += column sums of dz over e's rows) then grouped_gemm_backward with alpha
// (dx += alpha dz @ op(w[e])^T, dw[e] += alpha x_e^T @ dz_e), all accumulating into the gradients.
// Covered by tests/ops/grouped_gemm_test.cpp and tests/gpu/grouped_gemm_parity_test.cpp.
#include "graph/expr/grouped_gemm.h"

namespace moe {

Expr grouped_matmul(const Expr& x, const Expr& w, const Expr& offsets, bool trans_w,
                    const GroupedMatmulEpilogue& epilogue) {
  MOE_CHECK(x.shape().ndim() == 2 && w.shape().ndim() == 3, "grouped_matmul: x must be [N, K] and w [E, K, M], got ",
            x.shape(), " and ", w.shape());
  const int64_t k = trans_w ? w.shape()[2] : w.shape()[1], m = trans_w ? w.shape()[1] : w.shape()[2];
  MOE_CHECK(k == x.shape()[1], "grouped_matmul: x ", x.shape(), " does not match w ", w.shape(),
            trans_w ? " (trans_w)" : "");
  MOE_CHECK(offsets.dtype() == DType::i32 && offsets.shape() == Shape{w.shape()[0] + 1},
            "grouped_matmul: offsets must be i32 [", w.shape()[0] + 1, "], got ", dtype_name(offsets.dtype()), " ",
            offsets.shape());
  MOE_CHECK(x.dtype() == w.dtype(), "grouped_matmul: x is ", dtype_name(x.dtype()), " but w is ",
            dtype_name(w.dtype()));
  const bool has_bias = epilogue.bias.defined();
  if (has_bias)
    MOE_CHECK(epilogue.bias.shape() == Shape({w.shape()[0], m}) && epilogue.bias.dtype() == x.dtype(),
              "grouped_matmul: bias must be ", dtype_name(x.dtype()), " [", w.shape()[0], ", ", m, "], got ",
              dtype_name(epilogue.bias.dtype()), " ", epilogue.bias.shape());
  const float alpha = epilogue.alpha;
  const GroupedActivation act = epilogue.act;
  std::vector<Expr> children{x, w, offsets};
  if (has_bias) children.push_back(epilogue.bias);
  return x.graph().add(
      "grouped_matmul", Shape{x.shape()[0], m}, x.dtype(), children,
      [trans_w, alpha, act, has_bias](Node& n) {
        grouped_gemm_forward(n.in(0), n.in(1), n.in(2), n.alloc_val(), trans_w, false,
                             GroupedEpilogue{alpha, has_bias ? n.in(3) : Tensor(), act});
      },
      [trans_w, alpha, act, has_bias](Node& n) {
        // The epilogue's gradient first: the relu mask (from the saved output) and the bias's segment sums.
        Tensor dz, none_b;
        if (act == GroupedActivation::relu) dz = Tensor::empty(n.grad.shape(), n.grad.dtype(), n.grad.device());
        Tensor& dbias = has_bias && n.wants_grad(3) ? n.grad_of(3) : none_b;
        grouped_gemm_epilogue_backward(n.val, n.grad, n.in(2), act, dz, dbias);
        Tensor none_x, none_w;
        Tensor& dx = n.wants_grad(0) ? n.grad_of(0) : none_x;
        Tensor& dw = n.wants_grad(1) ? n.grad_of(1) : none_w;
        if (dx.defined() || dw.defined())
          grouped_gemm_backward(n.in(0), n.in(1), n.in(2), dz.defined() ? dz : n.grad, dx, dw, trans_w, alpha);
      });
}

}  // namespace moe
