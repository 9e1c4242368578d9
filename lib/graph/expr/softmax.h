// Expression operators for softmax / log-softmax over the last axis with an optional u8 keep-mask
// (graph nodes over lib/ops/softmax.h). Covered by tests/ops/softmax_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/softmax.h"

namespace moe {

/// softmax(x) over the last axis; `mask` (u8, x's shape or one row [1.., cols]; 1 keeps) is optional.
Expr softmax(const Expr& x, const Tensor& mask = {});
/// log(softmax(x)); masked entries are -inf and take no gradient.
Expr log_softmax(const Expr& x, const Tensor& mask = {});

}  // namespace moe
