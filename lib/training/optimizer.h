// Optimizer: Adam, AdamW, SGD (with momentum) and fairseq-style NAG over a ParameterStore's flat
// buffers. A step computes the global gradient norm n over the trainable ranges (of grad * grad_scale),
// clips to clip_norm (scale grad_scale min(1, clip_norm / n)), and applies one fused update per trainable
// range, so frozen parameter groups stay bit-identical. A non-finite norm (overflow under loss scaling)
// skips the update: parameters, moments, the step count (Adam's bias correction) and nag's lr_old stay.
// All of it runs on the store's device from the optimizer's scalars there (ops/optimizer_math.h StepSlot):
// queue_step neither copies to the host nor waits, so a CUDA graph can record it (lr and grad_scale come
// from set_step_inputs, called before each launch); step() is both plus last_norm(), which waits.
// Ranges set unclipped (set_unclipped: the batchwise thresholds) are stepped outside the norm and the clipping.
// State buffers are sized like store.values(); state()/load_state() carry them and the step count.
// Covered by tests/ops/optimizer_test.cpp (set_unclipped too), tests/gpu/optimizer_parity_test.cpp,
// tests/gpu/update_graph_test.cpp (a captured update), tests/emu/optimizer_no_sync_test.cpp; set_shard (ZeRO-1)
// and set_partitioned (expert parallelism) by tests/dist/data_parallel_test.cpp and
// expert_parallel_training_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "graph/parameters.h"
#include "tensor/tensor.h"

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

  /// One update with learning rate lr; returns the gradient norm before clipping (of grad * grad_scale),
  /// non-finite when the update was skipped. clip_norm = 0 disables clipping. grad_scale multiplies
  /// gradients first (e.g. 1 / loss scale). Waits for the device (to return the norm).
  double step(ParameterStore& store, double lr, double clip_norm = 0, double grad_scale = 1);
  /// The same over the given ranges only (a subset of store.trainable_ranges(), e.g. one group's):
  /// the norm, the clipping and the update see nothing else.
  double step(ParameterStore& store, const ParameterStore::Ranges& ranges, double lr, double clip_norm = 0,
              double grad_scale = 1);

  /// step() without waiting, in two halves. set_step_inputs writes lr and grad_scale into the optimizer's
  /// scalars on the store's device (creating the state there first): call it before each queue_step, or
  /// before each launch of a CUDA graph that recorded queue_step (outside the capture).
  void set_step_inputs(const ParameterStore& store, double lr, double grad_scale = 1);
  /// Queues the norm, the clipping, the skip decision and the update of `ranges` on the store's device,
  /// reading lr and grad_scale from the scalars: no copy to the host, no wait (a CUDA graph records it).
  void queue_step(ParameterStore& store, const ParameterStore::Ranges& ranges, double clip_norm = 0);
  /// The norm of the last queued step (non-finite when it skipped the update); waits for the device.
  double last_norm() const;

  /// The state buffers (views, not copies: save them before the next step) and "step" (i64 scalar,
  /// CPU); nag adds "lr_old" (f64 scalar, CPU). Empty buffers before the first step (before
  /// set_step_inputs); the scalars are read from the device (a wait).
  std::map<std::string, Tensor> state() const;
  /// Restores state() output; buffer sizes must match the store this optimizer is used with.
  void load_state(const std::map<std::string, Tensor>& state);

  /// ZeRO stage 1: keep state for, and update, only the elements [begin, end) of the store's flat
  /// buffers (this rank's shard); the norm and clipping still see every range. state() then holds the
  /// shard's buffers (end - begin elements); load_state() takes those or full-size ones (sliced).
  void set_shard(int64_t begin, int64_t end);
  bool sharded() const { return shard_end_ >= 0; }
  /// Expert parallelism: the elements of `ranges` hold this rank's own parameters (different on every
  /// rank, e.g. its experts); their squared gradient norm (an f64 element on the store's device) is
  /// summed over the ranks in place by `all_reduce` (a collective every rank's step calls; NCCL's stays on
  /// the device, though the communicator waits for it) before the norm is taken, so that every rank clips
  /// by the same global norm.
  void set_partitioned(ParameterStore::Ranges ranges, std::function<void(const Tensor&)> all_reduce);
  /// Parameters that are stepped but are not part of the model's gradient (the batchwise MoE gate's
  /// thresholds, docs/MODELS.md §3.10): step() leaves `ranges` out of the norm it returns and clips by,
  /// and updates them with grad * grad_scale, unclipped; a non-finite gradient there still skips the step.
  void set_unclipped(ParameterStore::Ranges ranges);

  /// Updates made (skipped ones not counted); reads the device's count (a wait).
  int64_t steps() const;
  Kind kind() const { return kind_; }
  const char* name() const;
  const OptimizerOptions& options() const { return options_; }

 private:
  void ensure_buffers(const ParameterStore& store);
  /// One slot of scalars_ as a 1-element tensor.
  Tensor slot(int s) const { return scalars_.flat_range(s, 1); }
  /// Adds the squared norms of `clipped` (own parts of partitioned_ apart) and `unclipped` into their slots.
  void add_norms(const ParameterStore& store, const ParameterStore::Ranges& clipped,
                 const ParameterStore::Ranges& unclipped) const;

  Kind kind_;
  OptimizerOptions options_;
  Tensor scalars_;            // StepSlot::count f64 on the store's device (ops/optimizer_math.h), from set_step_inputs
  int64_t loaded_steps_ = 0;  // load_state() before scalars_ exists: its step and lr_old
  double loaded_lr_old_ = 0;
  Tensor m_, v_;                              // adam/adamw moments; m_ is the momentum buffer of sgd/nag
  int64_t shard_begin_ = 0, shard_end_ = -1;  // set_shard(); -1: the whole store
  ParameterStore::Ranges partitioned_;        // set_partitioned()
  ParameterStore::Ranges unclipped_;          // set_unclipped() (sorted, disjoint)
  std::function<void(const Tensor&)> partitioned_all_reduce_;
};

inline const std::vector<std::string>& enum_names(Optimizer::Kind) {
  static const std::vector<std::string> names{"adam", "adamw", "sgd", "nag"};
  return names;
}

}  // namespace moe
