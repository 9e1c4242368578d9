// Shape expression operators: concat, split, slice, transpose (copies through lib/ops/shape_ops.h)
// and reshape (a view that shares memory and aliases its gradient; no copy, no backward).
//   concat(xs, axis): sizes add along `axis`, other axes equal; backward slices the gradient back.
//   slice(x, axis, begin, length) = x[..., begin:begin+length, ...]; backward adds into that range.
//   transpose(x, perm): y.shape[k] = x.shape[perm[k]]; backward transposes by the inverse perm.
// Covered by tests/ops/shape_ops_test.cpp and tests/gpu/shape_ops_parity_test.cpp.
#pragma once
#include <initializer_list>
#include <vector>

#include "graph/graph.h"

namespace moe {

Expr concat(const std::vector<Expr>& xs, int axis);
std::vector<Expr> split(const Expr& x, int axis, const std::vector<int64_t>& sizes);
Expr slice(const Expr& x, int axis, int64_t begin, int64_t length);
Expr transpose(const Expr& x, const std::vector<int>& perm);
/// A view with another shape of the same size; at most one entry may be -1 (inferred).
Expr reshape(const Expr& x, const std::vector<int64_t>& dims);
inline Expr reshape(const Expr& x, const Shape& shape) { return reshape(x, shape.vec()); }
inline Expr reshape(const Expr& x, std::initializer_list<int64_t> dims) {
  return reshape(x, std::vector<int64_t>(dims));
}

}  // namespace moe
