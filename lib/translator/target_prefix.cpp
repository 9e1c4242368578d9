// target_prefix.h implementation. Covered by tests/translator/target_prefix_test.cpp.
#include "translator/target_prefix.h"

#include <algorithm>
#include <limits>

#include "common/error.h"

namespace moe {

void check_prefixes(const TargetPrefixes& prefixes, int64_t sentences, const BeamOptions& o,
                    std::vector<int64_t>& max_len) {
  if (prefixes.empty()) return;
  MOE_CHECK(static_cast<int64_t>(prefixes.size()) == sentences, "beam search: ", prefixes.size(),
            " target prefixes for ", sentences, " sentences");
  for (int64_t s = 0; s < sentences; ++s) {
    const auto& p = prefixes[s];
    const int64_t n = static_cast<int64_t>(p.size());
    MOE_CHECK(n <= o.max_positions - 1, "beam search: the target prefix of sentence ", s, " has ", n,
              " tokens, more than the decoder's ", o.max_positions - 1, " positions");
    for (int32_t id : p)
      MOE_CHECK(id >= 0 && id != o.pad_id && id != o.bos_id && id != o.eos_id,
                "beam search: the target prefix of sentence ", s, " holds token id ", id,
                ", which cannot be forced (<pad>, <s>, </s> or negative)");
    max_len[s] = std::max(max_len[s], n);
  }
}

void force_prefix_candidates(const TargetPrefixes& prefixes, int64_t t, const std::vector<int64_t>& sentence_of,
                             int64_t beams, const Tensor& logp, const std::vector<float>& cum, int64_t k,
                             std::vector<float>& cand_score, std::vector<int32_t>& cand_index) {
  if (prefixes.empty()) return;
  const int64_t v = logp.shape()[1];
  const Tensor flat = logp.view(Shape{logp.numel()});
  for (size_t a = 0; a < sentence_of.size(); ++a) {
    if (!forced_at(prefixes, sentence_of[a], t)) continue;
    const int32_t token = prefixes[sentence_of[a]][t];
    MOE_CHECK(token < v, "beam search: the target prefix of sentence ", sentence_of[a], " holds token id ", token,
              ", outside the vocabulary of ", v);
    const int64_t first = static_cast<int64_t>(a) * k;
    const int64_t row = static_cast<int64_t>(a) * beams;
    cand_score[first] = cum[row] + static_cast<float>(flat.flat_range(row * v + token, 1).item());
    cand_index[first] = token;  // row 0 of the sentence's beams
    std::fill(cand_score.begin() + first + 1, cand_score.begin() + first + k, -std::numeric_limits<float>::infinity());
  }
}

}  // namespace moe
