// stepwise_scores.h implementation. Covered by tests/translator/ensemble_test.cpp.
#include "translator/stepwise_scores.h"

#include "translator/translator.h"

namespace moe {

std::vector<PairScore> score_pairs_stepwise(const Decoder& decoder, ParameterStore& params, Device device,
                                            const std::vector<std::vector<int32_t>>& src,
                                            const std::vector<std::vector<int32_t>>& tgt, const PairScoreOptions& o) {
  MOE_CHECK(params.device() == device, "pairs: the parameters are on ", params.device(), ", scoring on ", device);
  const DecoderSpec spec = decoder.spec();
  const std::vector<int64_t> cost = pair_costs(src, tgt, spec);  // o.per_pair: no Model::loss here to force
  const GraphOptions go{.training = false, .compute_dtype = o.dtype};
  std::vector<PairScore> out(src.size());
  for (const auto& idx : token_batches(cost, o.max_tokens)) {
    const data::Batch b = pair_batch(src, tgt, idx, spec.pad_id, spec.bos_id, spec.eos_id);
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = o.experts;
    const auto state = decoder.start(builder, b.src.to(device), b.src_mask.to(device));
    const int64_t B = b.size(), T = b.tgt_in.shape()[1];
    const std::vector<int32_t> in = b.tgt_in.to_vector<int32_t>(), gold = b.tgt_out.to_vector<int32_t>();
    std::vector<int32_t> prev(static_cast<size_t>(B));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t r = 0; r < B; ++r) prev[r] = in[r * T + t];
      const Tensor logp = decoder.step(builder, *state, Tensor::from_vector(prev, Shape{B})).val().to(Device::cpu());
      const int64_t V = logp.shape()[1];
      const std::vector<float> lp = logp.to_vector<float>();
      for (int64_t r = 0; r < B; ++r) {
        if (t >= b.tgt_lengths[r]) continue;
        PairScore& s = out[idx[r]];
        s.log_prob += lp[r * V + gold[r * T + t]];
        s.token_scores.push_back(lp[r * V + gold[r * T + t]]);
        s.tokens = b.tgt_lengths[r];
      }
    }
    if (o.after_batch) o.after_batch();
  }
  return out;
}

}  // namespace moe
