// The training state saved next to each checkpoint, in "<checkpoint stem>.state.safetensors":
// optimizer buffers (tensors "optimizer.<name>" from Optimizer::state()), the smoothed parameters of
// train.ema_decay (tensor "ema", when on) and, as metadata strings,
// the update / epoch / batch counters, the batch generator's State (data position and shuffling
// seed), the loss scaler, early-stopping figures and the unlogged part of the current log window.
// Written atomically (safetensors' temp file + rename). Covered by tests/training/checkpoint_test.cpp.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "tensor/tensor.h"

namespace moe {

struct TrainingState {
  int64_t update = 0;   // updates done
  int64_t epoch = 0;    // completed epochs
  int64_t batches = 0;  // batches consumed (the dropout stream of the next graph)
  uint64_t seed = 1;
  std::string data_state;  // data::BatchGenerator::State::to_string()
  double loss_scale = 1;
  int64_t loss_scale_clean = 0;
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // NaN: no validation yet
  int64_t best_update = 0;
  int64_t bad_validations = 0;
  // The current log window (so a resumed run logs the same figures).
  double window_loss = 0, window_gnorm = 0;
  int64_t window_tokens = 0, window_updates = 0;
  std::map<std::string, Tensor> optimizer;
  Tensor ema;  // train.ema_decay's smoothed parameters, flat (training/parameter_ema.h); undefined when off
};

/// "dir/checkpoint.last.safetensors" -> "dir/checkpoint.last.state.safetensors".
std::string state_path_for(const std::string& checkpoint_path);
/// "dir/checkpoint.last.safetensors" -> "dir/checkpoint.last.state.previous.safetensors": where the trainer keeps
/// the state of the checkpoint on disk while it writes a new pair (a run killed in between resumes from it).
std::string previous_state_path_for(const std::string& checkpoint_path);

void save_training_state(const std::string& path, const TrainingState& state);
/// Errors name the file and the missing or malformed entry.
TrainingState load_training_state(const std::string& path);

}  // namespace moe
