// Expression operator for the fused log-softmax + cross-entropy with label smoothing (graph node
// over lib/ops/cross_entropy.h). Covered by tests/ops/cross_entropy_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/cross_entropy.h"

namespace moe {

/// Per-row loss [...] (f32; f64 for f64 logits) of logits [..., V] against i32 targets [...];
/// rows with target == ignore_index give 0 and no gradient. Gradient flows to the logits only.
Expr cross_entropy(const Expr& logits, const Expr& targets, float label_smoothing = 0.f, int ignore_index = -1);

}  // namespace moe
