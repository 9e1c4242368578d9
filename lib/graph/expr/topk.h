// Expression operator for top-k along the last axis (graph nodes over lib/ops/topk.h):
// values are differentiable (backward scatters dvalues into dx), indices (i32) are not.
// Covered by tests/ops/topk_test.cpp and tests/gpu/topk_parity_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/topk.h"

namespace moe {

struct TopK {
  Expr values;   // x.dtype, shape x.shape with the last axis = k, descending
  Expr indices;  // i32, same shape; takes no gradient
};

/// The k largest entries of each row of x (ties: lower index first), 1 <= k <= x.shape().last().
TopK topk(const Expr& x, int64_t k);

}  // namespace moe
