// Checkpoint averaging (moe-average): the element-wise mean of the f32 parameters of several
// checkpoints of one model (same names, shapes and architecture), computed in f64; the vocabularies
// and metadata come from the first checkpoint, plus "moe.averaged" listing the inputs.
// Covered by tests/training/checkpoint_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

/// Writes the average of `inputs` to `output` (atomically). Errors name the file and parameter.
void average_checkpoints(const std::vector<std::string>& inputs, const std::string& output);

/// The last `n` numbered checkpoints (checkpoint.<update>.safetensors) of a run folder, oldest first.
std::vector<std::string> last_numbered_checkpoints(const std::string& run_dir, int64_t n);

}  // namespace moe
