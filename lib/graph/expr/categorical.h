// Expression operator for categorical sampling (graph node over lib/ops/categorical.h): one draw
// per row of non-negative weights, keyed by (seed, stream, row) so the CPU and GPU agree. The
// output is i32 and takes no gradient. Covered by tests/ops/categorical_test.cpp.
#pragma once
#include "graph/graph.h"

namespace moe {

/// i32 [..., 1]: per row of probs [..., n], an index drawn with probability p[e] / sum(p).
Expr categorical_sample(const Expr& probs, uint64_t seed, uint64_t stream);

}  // namespace moe
