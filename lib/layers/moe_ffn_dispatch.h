// MoE dispatch and combine without a loop over experts (docs/MODELS.md §3.7): the (expert, token,
// weight) assignments are sorted by expert (sort_by_key -> perm, offsets), token rows gathered into
// expert order (index_select), every expert layer is one grouped GEMM over the segments (autoscale, bias
// and the ReLU between layers in its epilogue), outputs scaled by the gate weights and added back to
// token order (index_add).
// Covered by tests/layers/moe_ffn_test.cpp (equals a loop over experts, values and gradients).
#pragma once
#include <vector>

#include "graph/expr/grouped_gemm.h"
#include "layers/moe_ffn_gating.h"

namespace moe {

/// Weights of E experts with L hidden layers: layers[0] [E, d, h], layers[1..L-1] [E, h, h],
/// layers[L] [E, h, d]; biases empty or one per layer ([E, out]). All in x's dtype.
struct ExpertWeights {
  std::vector<Expr> layers;
  std::vector<Expr> biases;
};

/// y [N, d] = sum over assignments a of weight[a] * Expert_{expert[a]}(x[token[a]]).
/// autoscale: layers whose input width differs from d are scaled by (in / d)^-1/2 (t2t).
Expr moe_dispatch(const Expr& x, const Routing& routing, const ExpertWeights& experts, bool autoscale);

/// The fused epilogue of expert layer l (of inputs of width d): the autoscale factor, the layer's bias
/// and, between layers, the ReLU.
GroupedMatmulEpilogue expert_epilogue(const ExpertWeights& experts, size_t l, int64_t d, bool autoscale);

}  // namespace moe
