// The dry run's counts over a lazy training graph (dry_run.h): FLOPs of its matrix products and
// attention, and the bytes its nodes will hold (values, and gradients of the nodes that take one;
// views hold none), each buffer rounded as the target device's caching allocator rounds it; then the
// memory terms per GPU and the validation peak. Covered by tests/training/dry_run_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "training/dry_run.h"

namespace moe {

struct GraphCounts {
  double forward_flops = 0;      // 2 x multiply-adds of matmul, linear, grouped GEMM and attention nodes
  int64_t activation_bytes = 0;  // node values and gradients, the logits' excepted
  int64_t logits_bytes = 0;      // values and gradients of the output scores (last axis in `logit_widths`)
  int64_t largest_node = 0;      // the largest single node buffer
};

/// The allocator's block for a request of `bytes` on a GPU (`gpu`) or the CPU.
int64_t device_bytes(bool gpu, int64_t bytes);

/// `logit_widths`: the last axes of output scores (the vocabulary; a sampled softmax's 1 + k and k).
GraphCounts count_graph(const Graph& g, const std::vector<int64_t>& logit_widths, bool gpu);

/// weights, gradients, optimizer state, activations, logits, largest temporary (per GPU).
std::vector<MemoryTerm> memory_terms(const TrainOptions& o, const ParameterStore& store, const GraphCounts& counts,
                                     const DryRunReport& r, bool gpu, int experts_per_rank);

/// The static terms plus one validation batch (valid.max_tokens) of output scores and their
/// log-softmax (the full vocabulary, or an adaptive softmax's head and largest band).
int64_t validation_bytes(const TrainOptions& o, const DryRunReport& r, const YAML::Node& config, DType compute,
                         bool gpu);

}  // namespace moe
