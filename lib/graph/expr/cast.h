// Expression operator for dtype casts (graph node over lib/ops/cast.h). Gradients flow between
// floating types only; casts to or from i32 take none. Covered by tests/ops/cast_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/cast.h"

namespace moe {

/// x converted to `dtype`; returns x itself when it already has that dtype.
Expr cast(const Expr& x, DType dtype);

}  // namespace moe
