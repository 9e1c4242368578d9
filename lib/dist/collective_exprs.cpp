// collective_exprs.h implementation. Covered by tests/dist/expert_parallel_test.cpp.
#include "dist/collective_exprs.h"

#include "ops/unary.h"

namespace moe::dist {

namespace {

Shape with_rows(const Shape& s, int64_t rows) {
  std::vector<int64_t> v = s.vec();
  v[0] = rows;
  return Shape(v);
}

int64_t total(const std::vector<int64_t>& counts) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

}  // namespace

Expr all_to_all_rows(Communicator& comm, const Expr& x, const std::vector<int64_t>& send,
                     const std::vector<int64_t>& recv) {
  MOE_CHECK(x.shape().ndim() >= 1 && total(send) == x.shape()[0], "all_to_all_rows: send counts add up to ",
            total(send), " rows, the input is ", x.shape());
  Communicator* c = &comm;
  return x.graph().add(
      "all_to_all_rows", with_rows(x.shape(), total(recv)), x.dtype(), {x},
      [c, send, recv](Node& n) { c->all_to_all_v(n.in(0), send, n.alloc_val(), recv); },
      [c, send, recv](Node& n) {
        Tensor back = Tensor::empty(n.children[0].shape(), n.dtype, n.graph->device());
        c->all_to_all_v(n.grad, recv, back, send);
        accumulate(n.grad_of(0), back);
      });
}

Expr all_reduce_sum(Communicator& comm, const Expr& x) {
  Communicator* c = &comm;
  return x.graph().add(
      "all_reduce_sum", x.shape(), x.dtype(), {x},
      [c](Node& n) {
        n.alloc_val().copy_from(n.in(0));
        c->all_reduce(n.val);
      },
      [c](Node& n) {
        Tensor g = n.grad.clone();
        c->all_reduce(g);
        accumulate(n.grad_of(0), g);
      });
}

}  // namespace moe::dist
