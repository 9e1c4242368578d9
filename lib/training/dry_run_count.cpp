// dry_run_count.h implementation. Covered by tests/training/dry_run_test.cpp.
#include "training/dry_run_count.h"

#include <algorithm>

#include "tensor/allocator.h"

namespace moe {

namespace {
/// 2 x multiply-adds of one node (0 for the element-wise rest).
double node_flops(const Node& n) {
  const double out = static_cast<double>(n.shape.numel());
  if (n.op == "linear" || n.op == "grouped_matmul") return 2 * out * static_cast<double>(n.children[0].shape()[-1]);
  if (n.op == "matmul") {
    const Shape& a = n.children[0].shape();
    const int64_t k = a[-2] == n.shape[-2] ? a[-1] : a[-2];
    return 2 * out * static_cast<double>(k);
  }
  if (n.op == "attention") {  // q [B, T, H, D], k [B, S, Hk, D]: scores and the weighted sum of values
    const double s = static_cast<double>(n.children[1].shape()[1]);
    return 2 * 2 * out * s;
  }
  return 0;
}

bool is_view(const Node& n) { return n.grad_alias_child >= 0 || n.op == "stop_gradient" || n.op == "detach"; }

int64_t padded(int64_t elements) { return (elements + 15) / 16 * 16; }  // the store's layout
}  // namespace

int64_t device_bytes(bool gpu, int64_t bytes) {
  return static_cast<int64_t>(Allocator::rounded(gpu ? Device::cuda(0) : Device::cpu(), static_cast<size_t>(bytes)));
}

GraphCounts count_graph(const Graph& g, const std::vector<int64_t>& logit_widths, bool gpu) {
  GraphCounts c;
  for (const auto& p : g.tape()) {
    const Node& n = *p;
    if (n.op.rfind("param:", 0) == 0 || n.op.rfind("state:", 0) == 0) continue;  // the store's
    c.forward_flops += node_flops(n);
    if (is_view(n)) continue;
    const int64_t raw = n.shape.numel() * static_cast<int64_t>(dtype_size(n.dtype));
    const int64_t value = device_bytes(gpu, raw), grad = n.requires_grad ? value : 0;
    const bool logits = n.shape.ndim() >= 1 && std::count(logit_widths.begin(), logit_widths.end(), n.shape[-1]) > 0;
    (logits ? c.logits_bytes : c.activation_bytes) += value + grad;
    c.largest_node = std::max(c.largest_node, value);
  }
  return c;
}

std::vector<MemoryTerm> memory_terms(const TrainOptions& o, const ParameterStore& store, const GraphCounts& counts,
                                     const DryRunReport& r, bool gpu, int experts_per_rank) {
  int64_t elements = 0;
  for (const ParamEntry& e : store.entries()) elements += padded(e.shape.numel());
  if (experts_per_rank > 0)  // this rank's experts only
    elements -= r.expert_parameters - r.expert_parameters / r.experts * experts_per_rank;
  const bool adam = o.optimizer == Optimizer::Kind::adam || o.optimizer == Optimizer::Kind::adamw;
  const bool momentum =
      o.optimizer == Optimizer::Kind::nag || (o.optimizer == Optimizer::Kind::sgd && o.optim.momentum != 0);
  const int buffers = adam ? 2 : momentum ? 1 : 0;
  const bool sharded = experts_per_rank == 0 && o.dist.shard(r.ranks);
  const int64_t state = sharded ? (elements + r.ranks - 1) / r.ranks : elements;
  const int64_t store_bytes = device_bytes(gpu, 4 * elements);
  return {
      {"weights (f32 master copy)", store_bytes},
      {"gradients (f32)", store_bytes},
      {sharded ? "optimizer state (sharded over " + std::to_string(r.ranks) + " ranks)"
               : std::string("optimizer state"),
       buffers * device_bytes(gpu, 4 * state)},
      {"activations and their gradients", counts.activation_bytes},
      {"logits and their gradient", counts.logits_bytes},
      {"largest temporary", counts.largest_node},
  };
}

int64_t validation_bytes(const TrainOptions& o, const DryRunReport& r, const YAML::Node& config, DType compute,
                         bool gpu) {
  int64_t width = r.tgt_vocab;
  const YAML::Node cutoffs = config["adaptive_softmax_cutoffs"];
  if (cutoffs && cutoffs.IsSequence() && cutoffs.size() > 0) {  // the head, then one band at a time
    const std::vector<int64_t> c = cutoffs.as<std::vector<int64_t>>();
    int64_t band = r.tgt_vocab - c.back();
    for (size_t i = 1; i < c.size(); ++i) band = std::max(band, c[i] - c[i - 1]);
    width = c.front() + static_cast<int64_t>(c.size()) + band;
  }
  const int64_t rows = scoring_batch_tokens(o.valid.decoding);
  const int64_t scores =
      device_bytes(gpu, rows * width * static_cast<int64_t>(dtype_size(compute))) + device_bytes(gpu, rows * width * 4);
  int64_t statics = 0;
  for (size_t i = 0; i < 3; ++i) statics += r.memory[i].bytes;
  return statics + scores;
}

}  // namespace moe
