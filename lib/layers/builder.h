// Builder: what a layer needs while it adds itself to a graph — the graph, a name prefix for its
// parameters (Marian-style scoped names such as "encoder.l0.self_attn.q.w"), the dropout setting,
// the list of auxiliary losses (load balancing, z-loss) that mixture-of-experts layers add, run-time
// flags, and an optional recorder of gate probabilities (analysis).
// Parameters are f32 masters; `weight()` returns them cast to the graph's compute dtype.
// Covered by tests/layers/transformer_test.cpp.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace moe {

class GateRecorder;  // layers/gate_recorder.h

struct AuxLoss {
  std::string name;  // e.g. "encoder.l0.moe.load"
  Expr value;        // a scalar (f32), already weighted by its coefficient
};

class Builder {
 public:
  Builder(Graph& graph, std::string prefix = "") : graph_(&graph), prefix_(std::move(prefix)) {}

  Graph& graph() const { return *graph_; }
  bool training() const { return graph_->training(); }
  DType dtype() const { return graph_->compute_dtype(); }
  const std::string& prefix() const { return prefix_; }
  /// A builder for a sub-scope: sub("l0").name("w") == prefix + ".l0.w".
  Builder sub(const std::string& scope) const;
  /// The sub-scope of layer `index` with a prefix: layer(3).name("w") == prefix + ".l3.w".
  Builder layer(int index, const char* scope = "l") const;
  std::string name(const std::string& leaf) const { return prefix_.empty() ? leaf : prefix_ + "." + leaf; }

  /// The f32 master parameter `prefix.leaf`.
  Expr param(const std::string& leaf, const Shape& shape, const Init& init, const std::string& group = "") const;
  /// The same, cast to the compute dtype (bf16 in mixed precision).
  Expr weight(const std::string& leaf, const Shape& shape, const Init& init, const std::string& group = "") const;

  /// Persistent state `prefix.leaf` (f32, no gradient; Graph::state), e.g. batch-norm running statistics.
  Expr state(const std::string& leaf, const Shape& shape, const Init& init) const;

  void add_aux_loss(const std::string& leaf, const Expr& value) const;
  /// Run-time switches shared by all layers of one graph (e.g. "mae.step" = "F" | "G" | "joint",
  /// "mae.inference" = "mixture" | "argmax"); empty string when unset.
  std::string flag(const std::string& key) const;
  void set_flag(const std::string& key, const std::string& value) const { (*flags_)[key] = value; }
  /// set_flag for each entry of `flags`.
  void set_flags(const std::map<std::string, std::string>& flags) const {
    for (const auto& [key, value] : flags) set_flag(key, value);
  }
  std::vector<AuxLoss>& aux_losses() const { return *aux_; }
  /// Analysis hook (layers/gate_recorder.h): gated layers of inference graphs report their gate
  /// probabilities to it; nullptr (the default) reports nothing. Shared by sub-builders.
  GateRecorder* gate_recorder() const { return *recorder_; }
  void set_gate_recorder(GateRecorder* recorder) const { *recorder_ = recorder; }

 private:
  Graph* graph_;
  std::string prefix_;
  std::shared_ptr<std::vector<AuxLoss>> aux_ = std::make_shared<std::vector<AuxLoss>>();
  std::shared_ptr<std::map<std::string, std::string>> flags_ = std::make_shared<std::map<std::string, std::string>>();
  std::shared_ptr<GateRecorder*> recorder_ = std::make_shared<GateRecorder*>(nullptr);
};

}  // namespace moe
