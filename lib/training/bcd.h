// Block coordinate descent for MAE (MODELS.md §1.6, paper Algorithm 3): the updates that run on each
// batch of an epoch, in order, as values of the builder flag "mae.step":
//   MAE-7 / MAE-6 (gate learned, training bcd): {"G", "F"} when epoch mod g_every == g_offset, else {"F"}
//   UNI-MAE (gate uniform): {"F"}          NOBCD (training joint): {"joint"}
// A G update changes only the gates (parameter group "gate", plain SGD with learning rate 1, no
// momentum); F and joint updates run the main optimizer (F: over everything but the gates). In a G
// epoch each batch gets its G update first, then the F update draws from the refreshed gates.
// A pure helper: the trainer decides how epochs are numbered (fairseq counts from 1, which with the
// defaults puts G steps in epochs 5, 10, 15, ...). Covered by tests/training/bcd_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layers/mae.h"

namespace moe {

struct BcdSchedule {
  int64_t g_every = 5;  // G steps in epochs e with e mod g_every == g_offset
  int64_t g_offset = 0;
};

/// The "mae.step" values to run, in order, on every batch of epoch `epoch`.
std::vector<std::string> mae_updates(const MaeOptions& o, const BcdSchedule& s, int64_t epoch);

/// The MAE options of a model architecture (Model::config_yaml(): attention type mae, heads), or
/// nullopt for a model without MAE attention.
std::optional<MaeOptions> mae_training_options(const YAML::Node& model_config);

}  // namespace moe
