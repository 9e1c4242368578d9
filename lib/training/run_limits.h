// What a training run needs from the machine, said plainly when it runs out: memory_advice, the recipe keys
// that reduce the memory a training update needs, appended to an out-of-memory error (train.max_tokens with
// train.update_freq, the dtype on a GPU).
// Covered by tests/training/run_limits_test.cpp and tests/scripts/memory_limits.sh.
#pragma once
#include <string>

#include "training/train_options.h"

namespace moe {

/// "; to need less memory: ..." with the keys of `o` that reduce a training update's memory and their values.
std::string memory_advice(const TrainOptions& o, bool gpu);

}  // namespace moe
