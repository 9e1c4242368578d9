// Batches: CPU i32 tensors padded with the pad id, ready for the trainer to move to the GPU.
// Translation: src = x </s>, tgt_in = <s> y, tgt_out = y </s>; masks are u8 1/0 of the same shape (the attention
// op's key-padding format); src_rows, tgt_rows and tgt_labels list the real positions; tgt_weights (optional)
// weighs the targets in the loss.
// LM: input = x[t], target = x[t+1], mask marks scored targets, weights (optional) weighs them in the loss.
// Covered by tests/data/batch_test.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace moe::data {

struct Batch {
  Tensor src, src_mask;                 // [B, S]
  Tensor tgt_in, tgt_out, tgt_mask;     // [B, T]
  // [N] i32, the N real targets: their flat positions b T + t in tgt_out and their ids, and [M] i32, the flat
  // positions b S + s of the M real source tokens, so that the output layer, the loss and the position-wise layers
  // skip the padding (models/transformer.h, RealPositions); undefined: every position, the padding masked.
  Tensor tgt_rows, tgt_labels, src_rows;
  // [B, T] f32: each target token's weight in the loss (data/target_weights.h; 0 at padding); undefined: all 1.
  Tensor tgt_weights;
  std::vector<int64_t> ids;             // sentence ids (line numbers, 0-based) to restore order
  std::vector<int32_t> src_lengths, tgt_lengths;  // with </s> (resp. <s>) counted
  int64_t src_tokens = 0, tgt_tokens = 0;         // real (unpadded) tokens
  int64_t size() const { return static_cast<int64_t>(ids.size()); }
};

/// Every tensor of a Batch: what moves to a device with it (those defined).
inline constexpr std::array<Tensor Batch::*, 9> kBatchTensors{
    &Batch::src,      &Batch::src_mask,   &Batch::tgt_in,   &Batch::tgt_out,    &Batch::tgt_mask,
    &Batch::tgt_rows, &Batch::tgt_labels, &Batch::src_rows, &Batch::tgt_weights};

/// Builds a translation batch from token spans (without specials).
Batch make_batch(const std::vector<std::span<const int32_t>>& src, const std::vector<std::span<const int32_t>>& tgt,
                 std::vector<int64_t> ids, int32_t pad_id, int32_t bos_id, int32_t eos_id);

/// Sets batch.src_rows, tgt_rows and tgt_labels from its src_mask, tgt_out and tgt_mask (host tensors).
void set_real_rows(Batch& batch);

struct LmBatch {
  Tensor input, target, mask;  // [B, T]; mask 1 where the target is scored
  Tensor weights;  // [B, T] f32: each target's weight in the loss (data/lm_token_weights.h); undefined: mask
  std::vector<int64_t> ids;    // block / window indices
  int64_t tokens = 0;          // scored targets
  int64_t size() const { return static_cast<int64_t>(ids.size()); }
};

/// Every tensor of an LmBatch: what moves to a device with it (those defined).
inline constexpr std::array<Tensor LmBatch::*, 4> kLmBatchTensors{&LmBatch::input, &LmBatch::target, &LmBatch::mask,
                                                                  &LmBatch::weights};

/// Packs rows (input, target, mask) of possibly different lengths, padding to the longest.
LmBatch make_lm_batch(const std::vector<std::vector<int32_t>>& inputs, const std::vector<std::vector<int32_t>>& targets,
                      const std::vector<std::vector<float>>& masks, std::vector<int64_t> ids, int32_t pad_id);

}  // namespace moe::data
