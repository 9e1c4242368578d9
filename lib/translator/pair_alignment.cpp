// pair_alignment.h implementation. Covered by tests/translator/alignment_test.cpp.
#include "translator/pair_alignment.h"

#include <utility>

#include "translator/alignment.h"
#include "translator/translator.h"

namespace moe {

std::vector<SoftAlignment> align_pairs(const Decoder& decoder, ParameterStore& params, Device device,
                                       const std::vector<std::vector<int32_t>>& src,
                                       const std::vector<std::vector<int32_t>>& tgt, const PairScoreOptions& o) {
  MOE_CHECK(params.device() == device, "align: the parameters are on ", params.device(), ", aligning on ", device);
  const std::vector<int64_t> cost = pair_costs(src, tgt, decoder.spec());
  const GraphOptions go{.training = false, .compute_dtype = o.dtype};
  std::vector<SoftAlignment> out(src.size());
  for (const std::vector<size_t>& idx : token_batches(cost, o.max_tokens)) {
    std::vector<const std::vector<int32_t>*> sources;
    std::vector<std::vector<Hypothesis>> given;  // each pair's target as its source's one hypothesis
    for (size_t i : idx) {
      sources.push_back(&src[i]);
      Hypothesis h;
      h.tokens = tgt[i];
      given.push_back({std::move(h)});
    }
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = o.experts;
    align_hypotheses(decoder, builder, sources, given);
    for (size_t r = 0; r < idx.size(); ++r) out[idx[r]] = std::move(given[r][0].alignment);
    if (o.after_batch) o.after_batch();
  }
  return out;
}

}  // namespace moe
