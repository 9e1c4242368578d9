// Expression operators for dense GEMMs (graph nodes over lib/ops/matmul.h):
//   matmul(a, b) = alpha * op(a) @ op(b); backward dA += alpha dC op(b)^T (transposed forms when
//   trans_a), dB += alpha op(a)^T dC, summed over the batch for a shared 2-D operand.
//   linear(x, w, bias) = x[..., in] @ w[in, out] + bias[out]; dbias = sum of dout over rows.
// Covered by tests/ops/matmul_test.cpp and tests/gpu/matmul_parity_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/matmul.h"

namespace moe {

Expr matmul(const Expr& a, const Expr& b, bool trans_a = false, bool trans_b = false, float alpha = 1.f);
/// bias may be an undefined Expr (no bias).
Expr linear(const Expr& x, const Expr& w, const Expr& bias = Expr());

}  // namespace moe
