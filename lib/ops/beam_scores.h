// Beam scores for one decoding step: candidate score = hypothesis score + next-token log-prob,
//   out[r, v] = cum[r] + logp[r, v],
// with tokens that may not be chosen set to -inf: <pad> and <s> always; </s> while a row is shorter
// than the minimum length (mode 1); every token but </s> when a row reached its maximum length
// (mode 2). One pass over [N, V] before the top-k of beam search. CPU reference in
// lib/ops/beam_scores.cpp, CUDA in cuda/ops/beam_scores.cu. Covered by
// tests/ops/beam_scores_test.cpp and tests/gpu/beam_scores_parity_test.cpp.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace moe {

enum class BeamRowMode : uint8_t { normal = 0, no_eos = 1, eos_only = 2 };

/// The special ids the step masks (-1 = none).
struct BeamSpecials {
  int32_t pad = 0, bos = 2, eos = 3;
};

namespace cpu {
void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out);
}  // namespace cpu
namespace cuda {
void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out);
}  // namespace cuda

/// The argument checks of beam_scores but for `out` (errors name beam_scores and the shapes).
void beam_scores_checks(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids);
/// logp [N, V] (f32, f64 on the CPU; bf16/f16 too on CUDA), cum [N] f32, mode [N] u8 (BeamRowMode),
/// out [N, V] f32, all on one device. Arguments are checked; errors name beam_scores and the shapes.
void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out);

}  // namespace moe
