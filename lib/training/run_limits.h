// What a training run needs from the machine, checked before it is too late, and said plainly when it
// runs out:
//  - create_run_dir, check_room: at start, the run folder can be created and written (a probe file is created and
//    removed) and, once the model is known, has room for two checkpoint pairs (each the checkpoint, 4 bytes per
//    parameter plus the vocabularies, and its training state, 4 bytes per parameter per optimizer buffer: Adam 2,
//    SGD/NAG 1), which replacing checkpoint.last needs (the old pair is kept until the new one is complete); less than
//    the run will keep at its fullest (last, best, keep_last numbered pairs and one being written) is a warning.
//  - memory_advice: the recipe keys that reduce the memory a training update needs, appended to an
//    out-of-memory error (train.max_tokens with train.update_freq, the dtype on a GPU).
// Covered by tests/training/run_limits_test.cpp, tests/scripts/disk_faults.sh and memory_limits.sh.
#pragma once
#include <cstdint>
#include <string>

#include "training/train_options.h"

namespace moe {

struct CheckpointEstimate {
  uint64_t checkpoint = 0, state = 0;  // bytes
  uint64_t pair() const { return checkpoint + state; }
};

/// The size of a checkpoint of `parameters` values with `vocab_bytes` of vocabularies, and of its training
/// state under `optimizer` (adam, adamw, sgd, nag).
CheckpointEstimate estimate_checkpoint(int64_t parameters, uint64_t vocab_bytes, Optimizer::Kind optimizer);

/// Creates `run_dir` (and its parents) and checks that a file can be written in it; errors name the folder
/// and the system's reason.
void create_run_dir(const std::string& run_dir);
/// An error (naming the folder, the space free and needed) unless the file system of `run_dir` has room
/// for two pairs; the pair of checkpoint.last already there counts as room. Warns (spdlog) when the free
/// space is less than `pairs_kept` + 1 pairs.
void check_room(const std::string& run_dir, const CheckpointEstimate& estimate, int64_t pairs_kept);

/// "; to need less memory: ..." with the keys of `o` that reduce a training update's memory and their values.
std::string memory_advice(const TrainOptions& o, bool gpu);

}  // namespace moe
