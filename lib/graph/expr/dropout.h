// Dropout expression operator: y = x * m / (1 - p) with the mask drawn from (graph.seed(),
// graph.next_rng_stream()); the identity (x itself, no node) in inference mode or when p == 0.
// The backward recomputes the mask. Math in lib/ops/dropout.h.
// Covered by tests/ops/dropout_test.cpp and tests/gpu/dropout_parity_test.cpp.
#pragma once
#include "graph/graph.h"

namespace moe {

Expr dropout(const Expr& x, float p);

}  // namespace moe
