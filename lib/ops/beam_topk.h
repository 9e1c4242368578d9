// The candidates of one beam-search step: per active sentence (a group of `beams` consecutive rows), the top k
// of its beam scores over beams x V,
//   values[a, :], indices[a, :] = topk(beam_scores(logp, cum, mode)[a*beams .. a*beams + beams - 1] flattened),
// with beam_scores' masks (ops/beam_scores.h) and topk's order (ops/topk.h: larger first, equal values by the
// lower index, NaN above everything), so the results equal the two ops run one after the other bit for bit.
// The CPU does it in one pass over logp with no [N, V] scores tensor: blocks of 64 candidates are added and
// their maximum compared with the group's current k-th best, and only the blocks that beat it are merged into
// a sorted list of k (CTranslate2's CPU beam search also avoids a full sort; this code is our own). Other
// devices run beam_scores then topk. Covered by tests/ops/beam_topk_test.cpp (against the two ops).
#pragma once
#include "ops/beam_scores.h"

namespace moe {

namespace cpu {
void beam_topk(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams,
               Tensor& values, Tensor& indices);
}  // namespace cpu

/// logp [N, V] (f32 or f64 on the CPU), cum [N] f32, mode [N] u8, N a multiple of beams; values [N / beams, k]
/// f32 and indices [N / beams, k] i32 (flat positions b * V + token within the group), 1 <= k <= beams * V.
void beam_topk(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams,
               Tensor& values, Tensor& indices);

}  // namespace moe
