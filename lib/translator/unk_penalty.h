// The unknown-word penalty (fairseq's --unkpen): at every free step of a search, unkpen is subtracted from the
// log-probability of the target vocabulary's <unk>,
//   logp'(y) = logp(y) - unkpen [y = <unk>],
// before the search chooses, so that a hypothesis's score counts it as fairseq's does. unkpen = inf never outputs
// <unk> (CTranslate2's disable_unk, Marian's default); a negative one favours it. Steps inside a forced prefix are
// taken as given. Beam search subtracts on the scorer's device (one scatter-add); sampling in its host row.
// The id comes from the target vocabulary (BeamOptions::unk_id), which the caller sets: the model's config does
// not hold it. Covered by tests/translator/unk_penalty_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "translator/beam_search.h"

namespace moe {

/// Checks that a nonzero penalty has an <unk> id inside the model's `vocab` output tokens.
void check_unk_penalty(const BeamOptions& o, int64_t vocab);

/// What choosing `token` at a free step costs: unkpen for <unk>, else 0.
inline double unk_cost(int32_t token, const BeamOptions& o) { return token == o.unk_id ? o.unkpen : 0.0; }

/// logp[r, unk_id] -= unkpen for every row r with `free_rows[r]` (logp [N, V] on any device, any floating dtype).
void penalize_unk(Tensor& logp, const std::vector<uint8_t>& free_rows, const BeamOptions& o);

}  // namespace moe
