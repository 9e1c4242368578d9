// Starting from a trained model and training only part of it (the MAE paper's fine-tuning modes,
// §5.2: FTG trains the gates, FTG+ the gates and the attention output projections, FTALL all):
//   train.init_from: CHECKPOINT   copies every parameter the checkpoint has (same name and shape) into
//                                 the fresh store; parameters it lacks (e.g. new gates) keep their init
//   train.trainable: [PATTERN..]  trains only parameters whose group equals a pattern or whose name
//                                 matches it as a regular expression (std::regex_match); the rest are
//                                 frozen, bit-identical through training (the optimizer skips them)
// Covered by tests/training/fine_tuning_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/parameters.h"

namespace moe {

struct InitFromReport {
  int64_t copied = 0;                // parameters taken from the checkpoint
  std::vector<std::string> missing;  // parameters of the model the checkpoint lacks (kept at init)
  int64_t unused = 0;                // checkpoint parameters the model does not have
};

/// Copies the checkpoint's parameters into `store` (allocated). A parameter present in both with
/// another shape is an error naming it and both shapes; so is a checkpoint sharing no parameter.
InitFromReport init_from_checkpoint(const std::string& path, ParameterStore& store);

/// Freezes every parameter no pattern selects (see the file comment); returns how many stay trainable.
/// An empty list trains everything. A pattern that selects nothing, or an invalid regex, is an error
/// naming it (and the groups that exist).
int64_t restrict_trainable(ParameterStore& store, const std::vector<std::string>& patterns);

}  // namespace moe
