// Expression operator for the grouped (per-expert) GEMM of mixture-of-experts dispatch:
// grouped_matmul(x [N, K], w [E, K, M] (or [E, M, K] with trans_w), offsets i32 [E+1]) -> [N, M],
// out[rows of e] = x[rows of e] @ op(w[e]). Gradients flow to x and w (offsets take none).
// Covered by tests/ops/grouped_gemm_test.cpp and tests/gpu/grouped_gemm_parity_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/grouped_gemm.h"

namespace moe {

Expr grouped_matmul(const Expr& x, const Expr& w, const Expr& offsets, bool trans_w = false);

}  // namespace moe
