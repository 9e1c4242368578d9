// moe-train --dry-run: what a recipe will cost, from its shapes alone, in seconds on any machine.
// The model is built for one training batch at train.max_tokens (translation: sentences of the
// longest kept length, max_tokens / (length + 1) of them; language models: max_tokens /
// tokens_per_sample blocks; masked LMs score mask_prob of the positions) into a parameter store that
// never allocates and a lazy graph that never runs, so every parameter and every node's shape and
// dtype are known and nothing is computed. From them:
//   parameters   total, per expert (one site's expert tensors / E: MoE FFN experts, MoA heads) and
//                active per token (total - sum over sites of (1 - active / E) * the site's expert tensors;
//                hierarchical MoE: k * k2; shared experts count as always active), each routed site as it
//                describes itself (Model::routed_sites, layers/sites.h: a token capacity's buffers and
//                expert choice's picks show in the FLOPs, which count the graph's nodes);
//   FLOPs        forward multiply-adds x 2 of the graph's matmul, linear, grouped GEMM and attention
//                nodes per target token; training = 3 x forward (backward = 2 x forward);
//   memory       per GPU, each buffer rounded as the device's caching allocator rounds it:
//                weights and gradients (the flat f32 store), optimizer state (Adam 2, SGD momentum / NAG
//                1 x the store; / ranks with ZeRO-1: dist.shard_optimizer, on past 2 ranks by default),
//                activations (every node's value and gradient: the graph keeps them until the update's
//                backward is done) without the logits, the logits (nodes whose last axis is the output
//                vocabulary) and the largest temporary (the largest node: an op's workspace is at most
//                its output), against a budget; the largest term is named when they do not fit.
//                Validation (inference, no tape) needs the static terms plus one valid.max_tokens batch
//                of logits and their log-softmax, counted separately.
// Expert parallelism (model.*.experts_per_rank = e): experts / e ranks, each holding e experts' weights;
// the batch's routed rows stay as in one process (balanced routing sends each rank as many as it sends).
// Vocabulary sizes: the vocabulary files when they exist, else data.vocab.size, else an error asking
// for one (--dry-run-vocab). Updates per epoch: counted from the data when it and the vocabularies are
// there (the token caches make that fast), else "unknown".
// Covered by tests/training/dry_run_test.cpp (within 25% of the allocator's measured peak for small CPU
// models) and tests/training/recipes_start_test.cpp (every recipe fits 80 GiB).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "training/train_options.h"
#include "training/train_task.h"

namespace moe {

struct DryRunOptions {
  double memory_bytes = 80.0 * (1ull << 30);  // the budget per GPU (--dry-run-memory)
  bool gpu = true;                            // estimate for a GPU (bf16 when train.dtype auto) or the CPU
  int ranks = 0;                              // 0: experts / experts_per_rank with expert parallelism, else 1
  int64_t vocab = 0;                          // > 0: use this vocabulary size (every vocabulary)
  bool count_updates = true;                  // load the data (when present) to count updates per epoch
};

struct MemoryTerm {
  std::string name;
  int64_t bytes = 0;
};

struct DryRunReport {
  std::string model_type;
  int64_t src_vocab = 0, tgt_vocab = 0;  // the output vocabulary is tgt_vocab (language models: both)
  int ranks = 1;
  int64_t batch_rows = 0, batch_length = 0, batch_targets = 0;
  int64_t parameters = 0, expert_parameters = 0, per_expert = 0, active_per_token = 0;
  int experts = 0;           // per site (0: no routed experts), the first routed site's
  double active = 0;         // experts active per token (per site)
  int shared = 0;            // shared experts per site (always active)
  bool mixed_sites = false;  // the routed sites differ in experts or experts per token
  double forward_flops_per_token = 0, train_flops_per_token = 0;
  int64_t updates_per_epoch = -1;  // -1: unknown (no data)
  std::string schedule;            // e.g. "linear, 2000 warm-up, over 60 epochs x 1234 updates"
  std::vector<MemoryTerm> memory;  // the training terms, in order
  int64_t validation_bytes = 0;    // static terms + one validation batch's logits and log-softmax
  double budget = 0;

  int64_t training_bytes() const;
  const MemoryTerm& largest() const;
  bool fits() const { return static_cast<double>(std::max(training_bytes(), validation_bytes)) <= budget; }
  /// The report moe-train --dry-run prints (ends with "fits" or "does not fit: <largest term>").
  std::string render() const;
};

/// The dry run of a recipe's options (see the file comment).
DryRunReport dry_run(const TrainOptions& options, const DryRunOptions& dry);

/// The synthetic full-size training batch the dry run sizes (and the estimate test trains on).
TrainBatch dry_run_batch(const TrainOptions& options, const YAML::Node& model_config);

/// The model section with vocabulary sizes filled in (from files, data.vocab.size or dry.vocab).
YAML::Node dry_run_model_section(const TrainOptions& options, const DryRunOptions& dry);

/// "80GiB", "512MiB", "1.5e9" -> bytes; errors name the option.
double parse_memory_size(const std::string& text, const std::string& option);

}  // namespace moe
