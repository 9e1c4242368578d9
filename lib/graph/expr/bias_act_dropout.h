// Expression operator for the fused bias + activation + dropout of the feed-forward block
// (math in lib/ops/bias_act_dropout.h): y = dropout(act(x + bias), p) with act relu or gelu,
// dropout drawn as graph/expr/dropout.h draws it (the node's own rng stream) and left out in
// inference mode or at p = 0. Covered by tests/ops/bias_act_dropout_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/unary.h"

namespace moe {

/// act(x + bias) with dropout p (training mode); x [..., n], bias [n]; act relu or gelu.
Expr bias_act_dropout(const Expr& x, const Expr& bias, UnaryOp act, float p);

}  // namespace moe
