// Gather / scatter expression operators over lib/ops/gather_scatter.h (indices are i32 inputs
// that take no gradient). Used for MoE dispatch: rows into expert order and back.
//   index_select(x, idx) = x[idx]                       dx += index_add(dy rows at idx)
//   index_add(base, idx, src) = base with src[m] added to row idx[m]   dbase += dy, dsrc += dy[idx]
//   gather_last(x, idx)[r, j] = x[r, idx[r, j]]           dx[r, idx[r, j]] += dy[r, j]
//   scatter_add_last(base, idx, src): base with src[r, j] added at [r, idx[r, j]]
// Covered by tests/ops/gather_scatter_test.cpp and tests/gpu/gather_scatter_parity_test.cpp.
#pragma once
#include "graph/graph.h"

namespace moe {

Expr index_select(const Expr& x, const Expr& idx);
Expr index_add(const Expr& base, const Expr& idx, const Expr& src);
Expr gather_last(const Expr& x, const Expr& idx);
Expr scatter_add_last(const Expr& base, const Expr& idx, const Expr& src);

}  // namespace moe
