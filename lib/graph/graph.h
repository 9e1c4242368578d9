// Graph: the expression graph for one batch. In training mode nodes are recorded on a tape and
// computed lazily by forward(); backward(loss) walks the tape in reverse (reverse-mode autodiff).
// In inference mode there is no tape: each node is computed as soon as it is created and keeps
// no references to its children, so memory is freed as soon as a value is no longer used.
// Parameters live in a ParameterStore (flat value and gradient buffers) shared across graphs.
// Covered by tests/graph/graph_test.cpp and tests/graph/mlp_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/node.h"
#include "graph/parameters.h"

namespace moe {

struct GraphOptions {
  bool training = true;              // tape + autodiff + dropout; false = eager inference, no tape
  DType compute_dtype = DType::f32;  // activations (bf16/f16 = mixed precision; masters stay f32)
  uint64_t seed = 1;                 // randomness (dropout, noise) = f(seed, step, node stream)
  uint64_t step = 0;
};

class Graph {
 public:
  explicit Graph(Device device, ParameterStore* params = nullptr, GraphOptions options = {});
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Device device() const { return device_; }
  bool training() const { return options_.training; }
  DType compute_dtype() const { return options_.compute_dtype; }
  const GraphOptions& options() const { return options_; }
  ParameterStore& params();

  /// A parameter (f32 master), declared in the store on first use.
  Expr param(const std::string& name, const Shape& shape, const Init& init, const std::string& group = "");
  /// A state entry of the store (f32, ParameterStore::declare_state): a leaf that never takes a
  /// gradient; ops that own it (batch_norm's running statistics) update its value in place.
  Expr state(const std::string& name, const Shape& shape, const Init& init);
  /// A leaf holding `value` (moved to the graph's device); with requires_grad it collects a gradient.
  Expr input(const Tensor& value, bool requires_grad = false);

  /// Adds an operation. `forward` must set node.val (alloc_val() or a view); `backward` may be empty
  /// for nodes that take no gradient or alias their gradient (node.grad_alias_child).
  Expr add(std::string op, const Shape& shape, DType dtype, std::vector<Expr> children, NodeFn forward,
           NodeFn backward = {}, int grad_alias_child = -1);

  /// Computes every node not yet computed (training mode; a no-op in inference mode).
  void forward();
  /// d(loss)/d(everything) for a one-element loss, scaled by `scale` (loss scaling, averaging).
  void backward(const Expr& loss, double scale = 1.0);
  /// Reverse pass seeded with an explicit gradient of `out` (same shape and dtype as `out`).
  void backward_from(const Expr& out, const Tensor& out_grad);

  /// Called during backward() with a trainable parameter's store index as soon as its gradient is
  /// complete (the reverse walk has passed its first use), so that a data-parallel trainer can
  /// all-reduce it while the rest of the backward runs (lib/dist/grad_sync.h).
  using ParamGradHook = std::function<void(int param_index)>;
  void set_param_grad_hook(ParamGradHook hook) { param_grad_hook_ = std::move(hook); }

  /// A fresh random stream id for a node (dropout masks, noise): unique within this step.
  uint64_t next_rng_stream() { return (options_.step << 24) + ++rng_counter_; }
  uint64_t seed() const { return options_.seed; }
  size_t tape_size() const { return tape_.size(); }
  /// The recorded nodes in creation order (training mode; shapes are known before forward() runs).
  const std::vector<std::shared_ptr<Node>>& tape() const { return tape_; }

 private:
  void run(Node& node);
  Expr store_leaf(int index, bool trainable);

  Device device_;
  ParameterStore* params_;
  GraphOptions options_;
  std::vector<std::shared_ptr<Node>> tape_;
  size_t computed_upto_ = 0;
  int64_t next_id_ = 0;
  uint64_t rng_counter_ = 0;
  ParamGradHook param_grad_hook_;
};

}  // namespace moe
