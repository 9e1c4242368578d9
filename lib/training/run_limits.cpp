// run_limits.h implementation. Covered by tests/training/run_limits_test.cpp.
#include "training/run_limits.h"

namespace moe {

std::string memory_advice(const TrainOptions& o, bool gpu) {
  std::string s = "; to need less memory: lower train.max_tokens (now " + std::to_string(o.max_tokens) +
                  ") and raise train.update_freq (now " + std::to_string(o.update_freq) +
                  ") by the same factor to keep the batch";
  if (gpu && o.dtype == DType::f32) s += ", or train.dtype bf16 (now f32)";
  return s + "; a smaller model (model.*) needs less too";
}

}  // namespace moe
