// Graph node for the embedding lookup: forward embedding_forward, backward embedding_backward
// into the table's gradient (which may be f32 while the output is bf16).
#include "graph/expr/embedding.h"

#include "ops/embedding.h"

namespace moe {

Expr embedding(const Expr& table, const Expr& ids, float scale, std::optional<DType> out_dtype) {
  MOE_CHECK(ids.dtype() == DType::i32, "embedding: ids must be i32, not ", dtype_name(ids.dtype()), " (shape ",
            ids.shape(), ")");
  const DType dt = out_dtype.value_or(table.dtype());
  MOE_CHECK(is_floating(dt), "embedding: output dtype ", dtype_name(dt), " is not floating");
  return table.graph().add(
      "embedding", embedding_shape(table.shape(), ids.shape()), dt, {table, ids},
      [scale](Node& n) { embedding_forward(n.in(0), n.in(1), n.alloc_val(), scale); },
      [scale](Node& n) {
        if (n.wants_grad(0)) embedding_backward(n.in(1), n.grad, n.grad_of(0), scale);
      });
}

Expr embedding(const Expr& table, const Tensor& ids, float scale, std::optional<DType> out_dtype) {
  return embedding(table, table.graph().input(ids), scale, out_dtype);
}

}  // namespace moe
