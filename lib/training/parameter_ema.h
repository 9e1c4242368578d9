// Smoothed parameters for train.ema_decay (Marian's --exponential-smoothing, fairseq's EMA): a second
// ParameterStore with the training store's layout whose flat buffer follows, after every update,
//   ema = decay * ema + (1 - decay) * params      (ops/ema.h, on the parameters' device)
// starting from the parameters at the start of training (after train.init_from), so after N updates
//   ema_N = decay^N p_0 + (1 - decay) sum_{k=1..N} decay^(N-k) p_k.
// Every value of the store is smoothed, batch-norm running statistics included. The trainer validates
// the smoothed parameters, writes them as checkpoint.ema.safetensors beside checkpoint.last, and keeps
// their flat buffer in the training state ("ema"), so that --resume continues them exactly.
// Covered by tests/training/ema_test.cpp.
#pragma once
#include <memory>

#include "graph/parameters.h"

namespace moe {

class ParameterEma {
 public:
  /// Copies the layout and the current values of `params`; decay in (0, 1).
  ParameterEma(const ParameterStore& params, double decay);
  /// One step towards `params` (the store it was made from).
  void update(const ParameterStore& params);
  /// The smoothed parameters, a store of the same names and shapes (validation, checkpoints).
  ParameterStore& params() { return *ema_; }
  /// The flat buffer saved in the training state.
  const Tensor& values() const { return ema_->values(); }
  /// Restores the flat buffer saved by a run of the same model; errors name `source`.
  void restore(const Tensor& values, const std::string& source);

 private:
  std::unique_ptr<ParameterStore> ema_;
  float decay_;
};

}  // namespace moe
