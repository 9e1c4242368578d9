// Builder: what a layer needs while it adds itself to a graph — the graph, a name prefix for its
// parameters (Marian-style scoped names such as "encoder.l0.self_attn.q.w"), the list of auxiliary
// losses (load balancing, z-loss) that mixture-of-experts layers add, and the graph's BuildContext
// (typed run-time settings: expert choice, batch target tokens, gate recorder).
// Parameters are f32 masters; `weight()` returns them cast to the graph's compute dtype.
// Covered by tests/layers/transformer_test.cpp.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "layers/build_context.h"

namespace moe {

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
  std::vector<AuxLoss>& aux_losses() const { return *aux_; }
  /// The training objective of a batch: its summed `loss` plus every auxiliary loss weighted by the
  /// batch's `tokens` (the update later divides the whole by its tokens, making them per-batch terms).
  Expr objective(const Expr& loss, int64_t tokens) const;
  /// The graph's run-time settings, shared by sub-builders (set them before building).
  BuildContext& context() const { return *context_; }

 private:
  Graph* graph_;
  std::string prefix_;
  std::shared_ptr<std::vector<AuxLoss>> aux_ = std::make_shared<std::vector<AuxLoss>>();
  std::shared_ptr<BuildContext> context_ = std::make_shared<BuildContext>();
};

}  // namespace moe
