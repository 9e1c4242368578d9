// Expression operator for layer normalisation over the last axis (graph node over
// lib/ops/layer_norm.h). Covered by tests/ops/layer_norm_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/layer_norm.h"

namespace moe {

/// (x - mean)/sqrt(var + eps) * gamma + beta over the last axis; gamma and beta ([d], f32 masters
/// or x's dtype) may be undefined Exprs (then 1 and 0). Gradients flow to x, gamma and beta.
Expr layer_norm(const Expr& x, const Expr& gamma, const Expr& beta, float eps = 1e-5f);

}  // namespace moe
