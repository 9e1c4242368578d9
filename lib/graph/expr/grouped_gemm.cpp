// Graph node for grouped_matmul: forward grouped_gemm_forward, backward grouped_gemm_backward
// (dx += dout @ op(w[e])^T, dw[e] += x_e^T @ dout_e), both accumulating into the gradients.
#include "graph/expr/grouped_gemm.h"

namespace moe {

Expr grouped_matmul(const Expr& x, const Expr& w, const Expr& offsets, bool trans_w) {
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
  return x.graph().add(
      "grouped_matmul", Shape{x.shape()[0], m}, x.dtype(), {x, w, offsets},
      [trans_w](Node& n) { grouped_gemm_forward(n.in(0), n.in(1), n.in(2), n.alloc_val(), trans_w, false); },
      [trans_w](Node& n) {
        Tensor none_x, none_w;
        Tensor& dx = n.wants_grad(0) ? n.grad_of(0) : none_x;
        Tensor& dw = n.wants_grad(1) ? n.grad_of(1) : none_w;
        grouped_gemm_backward(n.in(0), n.in(1), n.in(2), n.grad, dx, dw, trans_w);
      });
}

}  // namespace moe
