// Graph nodes for index_select / index_add / gather_last / scatter_add_last (math in
// lib/ops/gather_scatter.h); each backward is the other op of its pair.
#include "graph/expr/gather_scatter.h"

#include "ops/gather_scatter.h"
#include "ops/shape_ops.h"

namespace moe {
namespace {
void check_idx(const char* op, const Expr& idx) {
  MOE_CHECK(idx.dtype() == DType::i32, op, ": indices must be i32, not ", dtype_name(idx.dtype()), " (shape ",
            idx.shape(), ")");
}
/// out = base (a copy), the start of index_add / scatter_add_last.
void copy_base(const Tensor& base, Tensor& out) {
  strided_copy(base, out, 1, base.numel(), base.numel(), base.numel());
}
}  // namespace

Expr index_select(const Expr& x, const Expr& idx) {
  check_idx("index_select", idx);
  return x.graph().add(
      "index_select", index_select_shape("index_select", x.shape(), idx.shape()), x.dtype(), {x, idx},
      [](Node& n) { index_select_forward(n.in(0), n.in(1), n.alloc_val()); },
      [](Node& n) {
        if (n.wants_grad(0)) index_add_forward(n.grad_of(0), n.in(1), n.grad);
      });
}

Expr index_add(const Expr& base, const Expr& idx, const Expr& src) {
  check_idx("index_add", idx);
  MOE_CHECK(src.shape() == index_select_shape("index_add", base.shape(), idx.shape()) && src.dtype() == base.dtype(),
            "index_add: source ", src.shape(), " ", dtype_name(src.dtype()), " does not fit base ", base.shape(), " ",
            dtype_name(base.dtype()), " with indices ", idx.shape());
  return base.graph().add(
      "index_add", base.shape(), base.dtype(), {base, idx, src},
      [](Node& n) {
        Tensor& y = n.alloc_val();
        copy_base(n.in(0), y);
        index_add_forward(y, n.in(1), n.in(2));
      },
      [](Node& n) {
        if (n.wants_grad(0)) strided_copy(n.grad, n.grad_of(0), 1, n.grad.numel(), 0, 0, 0, 0, true);
        if (n.wants_grad(2)) index_select_forward(n.grad, n.in(1), n.grad_of(2), true);
      });
}

Expr gather_last(const Expr& x, const Expr& idx) {
  check_idx("gather_last", idx);
  return x.graph().add(
      "gather_last", idx.shape(), x.dtype(), {x, idx},
      [](Node& n) { gather_last_forward(n.in(0), n.in(1), n.alloc_val()); },
      [](Node& n) {
        if (n.wants_grad(0)) scatter_add_last_forward(n.grad_of(0), n.in(1), n.grad);
      });
}

Expr scatter_add_last(const Expr& base, const Expr& idx, const Expr& src) {
  check_idx("scatter_add_last", idx);
  MOE_CHECK(src.shape() == idx.shape() && src.dtype() == base.dtype(), "scatter_add_last: source ", src.shape(), " ",
            dtype_name(src.dtype()), " does not match indices ", idx.shape(), " and base ", dtype_name(base.dtype()));
  return base.graph().add(
      "scatter_add_last", base.shape(), base.dtype(), {base, idx, src},
      [](Node& n) {
        Tensor& y = n.alloc_val();
        copy_base(n.in(0), y);
        scatter_add_last_forward(y, n.in(1), n.in(2));
      },
      [](Node& n) {
        if (n.wants_grad(0)) strided_copy(n.grad, n.grad_of(0), 1, n.grad.numel(), 0, 0, 0, 0, true);
        if (n.wants_grad(2)) gather_last_forward(n.grad, n.in(1), n.grad_of(2), true);
      });
}

}  // namespace moe
