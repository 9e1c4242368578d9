// Dynamic masking for masked-LM batches (BERT / RoBERTa): each maskable token (not pad and not a
// special id < first_normal_id) is selected with probability p (0.15); a selected token becomes
// <mask> with prob. 0.8, a random normal token with 0.1, and stays itself with 0.1. Draws come from
// Philox keyed by (seed, step, element), so a batch's masking is reproducible and differs per step.
// Covered by tests/data/mlm_test.cpp.
#pragma once
#include <cstdint>

#include "data/batch.h"
#include "tensor/tensor.h"

namespace moe::data {

struct MlmOptions {
  double mask_prob = 0.15, replace_mask = 0.8, replace_random = 0.1;
  int32_t mask_id = -1;          // the <mask> token (required)
  int32_t first_normal_id = 4;   // ids below are specials: never masked, never drawn at random
  int32_t vocab_size = 0;
  int32_t pad_id = 0;
  uint64_t seed = 1;
};

/// tokens: i32 [B, T] on the CPU. Returns input (masked tokens), target (the original tokens) and
/// mask (1 where a token was selected: the loss positions).
LmBatch mask_tokens(const Tensor& tokens, const MlmOptions& opts, uint64_t step);

}  // namespace moe::data
