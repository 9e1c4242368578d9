// GateRecorder: the analysis hook for gated layers (e.g. `moe-score experts`: gate entropy, the share
// of instances per argmax expert, token-expert statistics; MODELS.md §0 "Analysis"). Set one on a
// Builder (Builder::set_gate_recorder) before building an inference graph; every MAE site then
// reports the gate probabilities it computed under its site name (the builder prefix, e.g.
// "encoder.l0.self_attn"), one record per call, copied to the host as f32. Training graphs compute
// lazily and report nothing. Covered by tests/layers/mae_test.cpp ("recorder").
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

struct GateRecord {
  Tensor probs;          // f32 CPU: [B, E] (one gate per sentence) or [B, T, E] (one per position)
  Tensor query_padding;  // u8 CPU [B, T] (1 = real query) when the site knew it, else undefined
  std::string policy;    // the site's gate-input policy (full_mean, causal_window_mean, ...)
};

class GateRecorder {
 public:
  /// Appends a record for `site` (probs and padding on any device; copied to the host).
  void record(const std::string& site, const Tensor& probs, const Tensor& query_padding, const std::string& policy);
  /// Records by site name, in call order.
  const std::map<std::string, std::vector<GateRecord>>& records() const { return records_; }
  void clear() { records_.clear(); }

 private:
  std::map<std::string, std::vector<GateRecord>> records_;
};

}  // namespace moe
