// Expression operator for the grouped (per-expert) GEMM of mixture-of-experts dispatch:
// grouped_matmul(x [N, K], w [E, K, M] (or [E, M, K] with trans_w), offsets i32 [E+1]) -> [N, M],
// out[rows of e] = act(alpha * x[rows of e] @ op(w[e]) + bias[e]) with the optional fused epilogue
// (GroupedMatmulEpilogue: alpha, bias [E, M], act none or relu; the default is the plain product).
// Gradients flow to x, w and bias (offsets take none): with relu the mask is the saved output's
// (out > 0), dz = mask * dout, dbias[e] = column sums of dz over e's rows (a device segment sum),
// dx and dw from alpha * dz. Covered by tests/ops/grouped_gemm_test.cpp and
// tests/gpu/grouped_gemm_parity_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/grouped_gemm.h"

namespace moe {

/// The fused epilogue of grouped_matmul: act(alpha * product + bias[expert]).
struct GroupedMatmulEpilogue {
  float alpha = 1.f;
  Expr bias;  // [E, M] in x's dtype, or undefined
  GroupedActivation act = GroupedActivation::none;
};

Expr grouped_matmul(const Expr& x, const Expr& w, const Expr& offsets, bool trans_w = false,
                    const GroupedMatmulEpilogue& epilogue = {});

}  // namespace moe
