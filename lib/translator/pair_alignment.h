// Word alignments of given translations (moe-score pairs --alignment, as Marian's scorer gives them): the
// alignment head's attention over each source while the model reads the given target, the same teacher-forced
// pass that aligns moe-translate's outputs (translator/alignment.h), over the pairs in padded batches of
// --max-tokens. Covered by tests/translator/alignment_test.cpp and tests/translator/scoring_test.cpp.
#pragma once
#include <vector>

#include "graph/parameters.h"
#include "models/decoder.h"
#include "translator/beam_search.h"
#include "translator/pair_scores.h"

namespace moe {

/// The soft alignment of each pair src[i], tgt[i] (token ids without specials): tgt[i].size() + 1 rows over
/// src[i].size() + 1 positions (each side's </s> last). `params` is the store the calling graph runs on;
/// options: max_tokens, dtype, experts and after_batch.
std::vector<SoftAlignment> align_pairs(const Decoder& decoder, ParameterStore& params, Device device,
                                       const std::vector<std::vector<int32_t>>& src,
                                       const std::vector<std::vector<int32_t>>& tgt, const PairScoreOptions& options);

}  // namespace moe
