// Expression wrappers of the stable counting sort by key and inverse_permutation (lib/ops/sort.h).
// All outputs are i32 and take no gradient. Covered by tests/ops/sort_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/sort.h"

namespace moe {

struct SortedSegments {
  Expr perm;     // i32 [N]: perm[j] = the position that lands at j (stable)
  Expr offsets;  // i32 [num_segments + 1]: segment starts; offsets[S] < N flags out-of-range keys
};

/// Sorts the positions of keys (i32 [N], values in [0, num_segments)) by key.
SortedSegments sort_by_key(const Expr& keys, int num_segments);
/// inv[perm[j]] = j.
Expr inverse_permutation(const Expr& perm);

}  // namespace moe
