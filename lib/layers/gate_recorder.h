// GateRecorder: the analysis hook for gated layers (`moe-score experts`: gate entropy, the share of
// instances per argmax expert, routed shares, token-expert PMI; docs/MODELS.md §0 "Analysis"). Set one on a
// Builder (Builder::set_gate_recorder) before building an inference graph; every gated site then
// reports under its site name (the builder prefix, e.g. "encoder.l0.self_attn", "decoder.l1.ffn",
// "moe1"), one record per call, copied to the host. Training graphs report nothing. The three families:
//   mae: probs = the gate g over the E experts, [B, E] (one per sentence) or [B, T, E] (per position);
//   moa: probs = the router softmax [B, T, E]; experts/gates = the top-k selection per token;
//   moe: probs = the sparse gate G(x) (the selected experts' gates, 0 elsewhere; hierarchical: the
//        products G_p G_i over all groups' experts), [..., E] as the site's input rows; experts/gates
//        = the routed experts per token by descending gate (batchwise: up to its inference cap; expert
//        choice: the experts that took the token, any number); max_per_token bounds a token's nonzero
//        gates (top-k routers: k; 0: no bound); routers where tokens pick experts and a capacity factor
//        is set report what the token capacity drops of the call's (token, slot) pairs: the capacity
//        applied (eval_capacity_factor), or at training's capacity_factor when none is applied.
// Covered by tests/layers/mae_test.cpp ("recorder") and tests/layers/gate_recorder_test.cpp.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

/// A token capacity over one call's routed (token, slot) pairs (moe_capacity.h): C per expert, the pairs,
/// those past C, the pairs kept (sum over experts of min(count, C)) and the slots (experts x C).
struct CapacityRecord {
  double factor = 0;     // 0: no capacity measured
  bool applied = false;  // true: the layer dropped them; false: measured at training's factor only
  int64_t capacity = 0, pairs = 0, dropped = 0, kept = 0, slots = 0;
};

struct GateRecord {
  std::string family;    // mae | moa | moe
  Tensor probs;          // f32 CPU: [B, E] (one gate per sentence) or [B, T, E] / [N, E] (one per token)
  Tensor query_padding;  // u8 CPU [B, T] (1 = real query) when the site knew it, else undefined
  std::string policy;    // MAE: the gate-input policy (full_mean, ..., uniform); moa: "top<k>"; moe: its gating
  Tensor experts;        // i32 CPU [..., k]: top-k routers' selected experts (-1: an empty slot); else undefined
  Tensor gates;          // f32 CPU [..., k]: their gates (0 in empty slots)
  int max_per_token = 0;  // moe: a token's gate has at most this many nonzeros (0: no bound)
  CapacityRecord capacity;
};

class GateRecorder {
 public:
  /// Appends an MAE record for `site` (probs and padding on any device; copied to the host).
  void record(const std::string& site, const Tensor& probs, const Tensor& query_padding, const std::string& policy);
  /// Appends `r` for `site`, its tensors copied to the host (probs and gates as f32).
  void record(const std::string& site, GateRecord r);
  /// Records by site name, in call order.
  const std::map<std::string, std::vector<GateRecord>>& records() const { return records_; }
  void clear() { records_.clear(); }

 private:
  std::map<std::string, std::vector<GateRecord>> records_;
};

/// A router's record from its assignments (expert[a], gate[a], token[a]) of `rows` tokens to E experts:
/// probs [rows, E] sums the gates per expert; experts/gates [rows, k] list each token's assignments by
/// descending gate (ties: lower expert first), k = the most assignments of any token (short rows end in
/// expert -1, gate 0). The leading dimensions become `lead` (numel = rows), e.g. [B, T].
GateRecord routed_gate_record(const std::vector<int32_t>& expert, const std::vector<double>& gate,
                              const std::vector<int32_t>& token, int64_t experts, const Shape& lead);

}  // namespace moe
