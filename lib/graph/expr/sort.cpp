// Graph nodes of sort_by_key: the "sort_by_key" node (perm) runs the kernel and hands the offsets
// to the "sort_offsets" node through a shared slot; neither takes a gradient.
#include "graph/expr/sort.h"

#include <memory>

namespace moe {

SortedSegments sort_by_key(const Expr& keys, int num_segments) {
  Graph& g = keys.graph();
  MOE_CHECK(num_segments >= 1, "sort_by_key: num_segments must be >= 1, got ", num_segments);
  MOE_CHECK(keys.dtype() == DType::i32 && keys.shape().ndim() == 1, "sort_by_key: keys must be i32 [N], got ",
            dtype_name(keys.dtype()), " ", keys.shape());
  auto slot = std::make_shared<Tensor>();
  const Shape offsets_shape{int64_t(num_segments) + 1};
  Expr perm = g.add("sort_by_key", keys.shape(), DType::i32, {keys}, [slot, num_segments, offsets_shape](Node& n) {
    *slot = Tensor::empty(offsets_shape, DType::i32, n.in(0).device());
    sort_by_key(n.in(0), num_segments, n.alloc_val(), *slot);
  });
  perm->requires_grad = false;
  Expr offsets = g.add("sort_offsets", offsets_shape, DType::i32, {perm}, [slot](Node& n) {
    MOE_CHECK(slot->defined(), "sort_by_key: the offsets were already taken (node computed twice?)");
    n.val = *slot;
    *slot = Tensor();
  });
  offsets->requires_grad = false;
  return {perm, offsets};
}

Expr inverse_permutation(const Expr& perm) {
  MOE_CHECK(perm.dtype() == DType::i32 && perm.shape().ndim() == 1, "inverse_permutation: perm must be i32 [N], got ",
            dtype_name(perm.dtype()), " ", perm.shape());
  Expr inv = perm.graph().add("inverse_permutation", perm.shape(), DType::i32, {perm},
                              [](Node& n) { inverse_permutation(n.in(0), n.alloc_val()); });
  inv->requires_grad = false;
  return inv;
}

}  // namespace moe
