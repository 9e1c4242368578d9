// Expression operators for reductions over one axis (graph nodes over lib/ops/reduce.h) and over
// the whole tensor (sum_all / mean_all give shape []). Covered by tests/ops/reduce_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/reduce.h"

namespace moe {

/// op over `axis` (negative counts from the end); keepdim keeps the axis with size 1.
Expr reduce(ReduceOp op, const Expr& x, int axis, bool keepdim = false);
inline Expr sum(const Expr& x, int axis, bool keepdim = false) { return reduce(ReduceOp::sum, x, axis, keepdim); }
inline Expr mean(const Expr& x, int axis, bool keepdim = false) { return reduce(ReduceOp::mean, x, axis, keepdim); }
inline Expr max(const Expr& x, int axis, bool keepdim = false) { return reduce(ReduceOp::max, x, axis, keepdim); }
inline Expr logsumexp(const Expr& x, int axis, bool keepdim = false) {
  return reduce(ReduceOp::logsumexp, x, axis, keepdim);
}
/// Population variance (divides by n).
inline Expr var(const Expr& x, int axis, bool keepdim = false) { return reduce(ReduceOp::var, x, axis, keepdim); }

/// Sum / mean of every element, shape [] (sum_all of an empty tensor is 0; mean_all is an error).
Expr sum_all(const Expr& x);
Expr mean_all(const Expr& x);

}  // namespace moe
