// Gate inputs of MAE sites (docs/MODELS.md §1.4): what the gate MLP sees, by policy.
//   full_mean           u_b   = mean of x_b over its real (non-pad) positions        (per sentence)
//   causal_prefix_mean  u_b,t = mean(x_b,1..t)                                        (per position)
//   causal_window_mean  u_b,t = mean(x_b,max(1,t-W+1)..t)                             (per position)
//   source_mean         u_b   = AttentionInput::source_mean (encoder output mean)     (per sentence)
// The causal means are one GEMM with a [T, L] averaging matrix over [recent inputs; x] (L = P + T).
// Incremental decoding (AttentionInput::cache set) keeps, per hypothesis, the running sum
// ("mae.sum", prefix) or the last W-1 inputs ("mae.window") in KVCache::rows plus the position count,
// so a step equals the full causal recomputation. full_mean while decoding incrementally reads the
// prefix mean: the future is unknown there, so the prefix is its only causal reading (teacher-forced
// graphs, i.e. training and scoring, use the whole target as the paper does: that is why decoder
// sites default to causal_prefix_mean, MaeOptions::kDefaultGateInput).
// Covered by tests/layers/mae_test.cpp, mae_model_test.cpp and mae_causality_test.cpp.
#pragma once
#include <string>

#include "layers/attention_layer.h"
#include "layers/mae.h"

namespace moe {

struct MaeGateInput {
  Expr u;                     // [N, d] in the requested dtype
  bool per_position = false;  // N = B * Tq (else N = B)
};

/// The gate input of one site call; window = W of causal_window_mean.
MaeGateInput mae_gate_input(const AttentionInput& in, GateInput policy, int64_t window, DType dtype);

/// x [B, T, d] averaged over the real positions of padding (u8 [B, T], 1 = real; undefined: all
/// positions) -> [B, d]; a row without real positions gives 0.
Expr sequence_mean(const Expr& x, const Tensor& padding);

}  // namespace moe
