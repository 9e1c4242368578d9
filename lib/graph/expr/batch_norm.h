// Expression operator for batch normalisation of [..., C] inputs over the rows (graph node over
// lib/ops/batch_norm.h). Covered by tests/ops/batch_norm_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/batch_norm.h"

namespace moe {

/// Normalises each column of x over the rows. training: batch statistics, running_mean/var
/// ([C], f32; f64 or f32 for f64 x; on the graph's device) updated in place when the node runs (they
/// may be undefined Tensors in training); eval: the running statistics. gamma/beta may be undefined.
/// Gradients flow to x (through the batch statistics in training), gamma and beta.
Expr batch_norm(const Expr& x, const Expr& gamma, const Expr& beta, Tensor running_mean, Tensor running_var,
                bool training, float momentum = 0.1f, float eps = 1e-5f);
/// The same with the running statistics as graph leaves that take no gradient (Graph::state: f32
/// views into the parameter store, so the in-place update persists and is checkpointed).
Expr batch_norm(const Expr& x, const Expr& gamma, const Expr& beta, const Expr& running_mean, const Expr& running_var,
                bool training, float momentum = 0.1f, float eps = 1e-5f);

}  // namespace moe
