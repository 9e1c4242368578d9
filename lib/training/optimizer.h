// Optimizer: Adam, AdamW, SGD (with momentum) and fairseq-style NAG over a ParameterStore's flat
// buffers. step() computes the global gradient norm over the trainable ranges (of grad * grad_scale),
// clips it to clip_norm, and applies one fused update per trainable range, so frozen parameter
// groups stay bit-identical. A non-finite norm (overflow under loss scaling) skips the update.
// Ranges set unclipped (set_unclipped: the batchwise thresholds) are stepped outside the norm and the clipping.
// State buffers are sized like store.values(); state()/load_state() carry them and the step count.
// Covered by tests/ops/optimizer_test.cpp (set_unclipped too); set_shard (ZeRO-1) and set_partitioned (expert
// parallelism) by tests/dist/data_parallel_test.cpp and expert_parallel_training_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "graph/parameters.h"

namespace moe {

struct OptimizerOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  double weight_decay = 0;                        // L2 for adam/sgd/nag, decoupled for adamw
  double momentum = 0.9;                          // sgd (0 = plain SGD), nag (fairseq default 0.99)
};

class Optimizer {
 public:
  enum class Kind { adam, adamw, sgd, nag };
  /// "adam", "adamw", "sgd" or "nag"; anything else is an error listing the names.
  static std::unique_ptr<Optimizer> create(const std::string& name, const OptimizerOptions& options = {});
  static std::unique_ptr<Optimizer> create(Kind kind, const OptimizerOptions& options = {});
  Optimizer(Kind kind, const OptimizerOptions& options) : kind_(kind), options_(options) {}

  /// One update with learning rate lr; returns the gradient norm before clipping (of grad * grad_scale).
  /// clip_norm = 0 disables clipping. grad_scale multiplies gradients first (e.g. 1 / loss scale).
  double step(ParameterStore& store, double lr, double clip_norm = 0, double grad_scale = 1);
  /// The same over the given ranges only (a subset of store.trainable_ranges(), e.g. one group's):
  /// the norm, the clipping and the update see nothing else.
  double step(ParameterStore& store, const ParameterStore::Ranges& ranges, double lr, double clip_norm = 0,
              double grad_scale = 1);

  /// Gradient norm of the trainable ranges (or of `ranges`) of grad * grad_scale (syncs the host).
  static double grad_norm(const ParameterStore& store, double grad_scale = 1);
  static double grad_norm(const ParameterStore& store, const ParameterStore::Ranges& ranges, double grad_scale = 1);

  /// The state buffers (views, not copies: save them before the next step) and "step" (i64 scalar,
  /// CPU); nag adds "lr_old" (f64 scalar, CPU). Empty buffers before the first step.
  std::map<std::string, Tensor> state() const;
  /// Restores state() output; buffer sizes must match the store this optimizer is used with.
  void load_state(const std::map<std::string, Tensor>& state);

  /// ZeRO stage 1: keep state for, and update, only the elements [begin, end) of the store's flat
  /// buffers (this rank's shard); the norm and clipping still see every range. state() then holds the
  /// shard's buffers (end - begin elements); load_state() takes those or full-size ones (sliced).
  void set_shard(int64_t begin, int64_t end);
  bool sharded() const { return shard_end_ >= 0; }
  /// Expert parallelism: the elements of `ranges` hold this rank's own parameters (different on every
  /// rank, e.g. its experts); their squared gradient norm is summed over the ranks with `sum` before
  /// the norm is taken, so that every rank clips by the same global norm.
  void set_partitioned(ParameterStore::Ranges ranges, std::function<double(double)> sum);
  /// Parameters that are stepped but are not part of the model's gradient (the batchwise MoE gate's
  /// thresholds, docs/MODELS.md §3.10): step() leaves `ranges` out of the norm it returns and clips by,
  /// and updates them with grad * grad_scale, unclipped; a non-finite gradient there still skips the step.
  void set_unclipped(ParameterStore::Ranges ranges);

  int64_t steps() const { return steps_; }
  Kind kind() const { return kind_; }
  const char* name() const;
  const OptimizerOptions& options() const { return options_; }

 private:
  void ensure_buffers(const ParameterStore& store);

  Kind kind_;
  OptimizerOptions options_;
  int64_t steps_ = 0;
  double lr_old_ = 0;                         // nag: the previous learning rate (0 before the first step)
  Tensor m_, v_;                              // adam/adamw moments; m_ is the momentum buffer of sgd/nag
  int64_t shard_begin_ = 0, shard_end_ = -1;  // set_shard(); -1: the whole store
  ParameterStore::Ranges partitioned_;        // set_partitioned()
  ParameterStore::Ranges unclipped_;          // set_unclipped() (sorted, disjoint)
  std::function<double(double)> partitioned_sum_;
  double partitioned_norm(const ParameterStore& store, const ParameterStore::Ranges& ranges, double grad_scale) const;
};

inline const std::vector<std::string>& enum_names(Optimizer::Kind) {
  static const std::vector<std::string> names{"adam", "adamw", "sgd", "nag"};
  return names;
}

}  // namespace moe
