// ExpertPlacement: the trainer's side of expert parallelism (model.ffn.experts_per_rank with several
// ranks; the layer is lib/layers/moe_ffn_expert_parallel.h). The MoE layers declare this rank's experts
// in the parameter group kLocalExpertGroup with experts_per_rank rows instead of experts. This class
// maps between that per-rank layout of the flat buffers and the layout one process would have (the
// "full" layout: every expert, in a CPU store declared in the same order):
//   initialise  rank r's experts = rows [r*e, (r+1)*e) of the initialisation one process gives the
//               whole tensor (same seed, same name), so training starts where one process would
//   to_full     a flat vector of the per-rank layout (values, Adam moments) -> the full layout, gathering
//               every rank's experts (a collective); from_full: back, keeping this rank's rows
//   gathered    the parameters in the full layout, for rank 0's checkpoints (a collective)
// Checkpoints and their optimizer state are therefore the single-process ones, loadable by moe-translate
// and resumable with any number of ranks. Covered by tests/dist/data_parallel_test.cpp (LSTM-MoE case).
#pragma once
#include <memory>
#include <vector>

#include "dist/communicator.h"
#include "graph/parameters.h"

namespace moe {

class ExpertPlacement {
 public:
  ExpertPlacement(dist::Communicator& comm, const ParameterStore& store);
  /// Whether this rank holds experts of its own.
  bool active() const { return !locals_.empty(); }
  static bool is_local(const ParamEntry& e);
  /// The trainable flat ranges of this rank's experts (sorted).
  const ParameterStore::Ranges& ranges() const { return ranges_; }

  void initialise(ParameterStore& store) const;
  Tensor to_full(const Tensor& flat) const;
  Tensor from_full(const Tensor& full) const;
  /// The store's parameters in the full layout (CPU; valid until the next call).
  const ParameterStore& gathered();
  int64_t full_numel() const { return full_->values().numel(); }
  /// This rank's rows of `full` (a checkpoint's tensor of entry e; other entries: `full` itself).
  Tensor local_part(const ParamEntry& e, const Tensor& full) const;

 private:
  dist::Communicator& comm_;
  const ParameterStore& store_;
  std::unique_ptr<ParameterStore> full_;  // the full layout, declared like store_
  std::vector<int> locals_;
  ParameterStore::Ranges ranges_;
};

}  // namespace moe
