// The summed translation loss of a teacher-forced batch: sum over its target tokens of w * CE, with w each
// token's weight (data::Batch::tgt_weights: data weighting, data/target_weights.h) or 1 when the batch has none.
// Covered by tests/training/weighted_loss_test.cpp.
#pragma once
#include "layers/builder.h"

namespace moe {

/// `ce` holds the per-row losses of the real targets (`rows` defined: their flat positions b T + t, as
/// data::Batch::tgt_rows) or of every position b T + t (`rows` undefined; padding rows are 0); `weights` is the
/// batch's [B, T] f32 tgt_weights on the graph's device, or undefined.
Expr summed_target_loss(const Builder& b, const Expr& ce, const Tensor& weights, const Tensor& rows);

}  // namespace moe
