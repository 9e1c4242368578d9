// Guided-alignment training (Marian's --guided-alignment; Garg et al. 2019, "Jointly Learning to Align and
// Translate with Transformer Models"): the model's alignment head (Decoder::alignment: a Transformer's last
// decoder layer's first cross-attention head, an LSTM's attention) is trained toward given word alignments
// (data.train.alignment, data/word_alignments.h) beside translation. With A the head's weights [B, T, S] and G the
// guidance (per target position with links, its links' weights normalised to sum 1; other rows zero), the
// training loss gains, in the units of the summed cross-entropy it is added to,
//   ce:   -weight * sum_{b,t,s} G log(A + 1e-6)                  (Marian's default cost)
//   mse:   weight / 2 * sum over the rows with links of (A - G)^2
// so that, divided by the batch's target tokens as the cross-entropy is, it is a cost per target token.
// Covered by tests/training/guided_alignment_test.cpp and tests/training/guided_alignment_loss_test.cpp.
#pragma once
#include "common/named_enum.h"
#include "data/word_alignments.h"
#include "layers/builder.h"
#include "models/model.h"

namespace moe {

MOE_NAMED_ENUM(GuidedAlignmentCost, ce, mse)

struct GuidedAlignmentOptions {
  double weight = 0.1;  // Marian's --guided-alignment-weight
  GuidedAlignmentCost cost = GuidedAlignmentCost::ce;
};

/// The weighted cost of the attention `weights` [B, T, S] (f32 or f64) against `guidance` (the same shape, on
/// the CPU): an f32 scalar in b's graph.
Expr guided_alignment_cost(const Builder& b, const Expr& weights, const Tensor& guidance,
                           const GuidedAlignmentOptions& options);

/// The summed cross-entropy of `model` on `batch` (on the device; `cpu` the same batch on the CPU, whose ids pick
/// the guidance) plus the guided-alignment cost of its alignment head, read from the same teacher-forced pass;
/// a model without an alignment head is an error.
Expr loss_with_guided_alignment(const Model& model, const Builder& b, const data::Batch& batch, const data::Batch& cpu,
                                float label_smoothing, const data::WordAlignments& alignments,
                                const GuidedAlignmentOptions& options);

}  // namespace moe
