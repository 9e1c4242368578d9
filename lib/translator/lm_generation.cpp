// lm_generation.h implementation: one inference graph and decoder state per batch, the prompts as forced
// prefixes, the search as moe-translate's. Covered by tests/translator/lm_generation_test.cpp.
#include "translator/lm_generation.h"

#include <algorithm>

#include "common/error.h"
#include "translator/sampling_search.h"

namespace moe {

std::vector<std::vector<Hypothesis>> generate_continuations(const Decoder& lm, ParameterStore& params, Device device,
                                                            const TranslatorOptions& o,
                                                            const std::vector<std::vector<int32_t>>& prompts,
                                                            const std::function<void(int64_t, int64_t)>& on_batch) {
  const DecoderSpec c = lm.spec();
  BeamOptions search = o.search;
  search.pad_id = c.pad_id;
  search.bos_id = c.bos_id;
  search.eos_id = c.eos_id;
  search.max_positions = c.max_positions;
  search.max_len_a += 1.0;  // the prompt's own tokens come first: a * |prompt| + b more after them
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < prompts.size(); ++i) {
    MOE_CHECK(static_cast<int64_t>(prompts[i].size()) < c.max_positions, "generate: prompt ", i + 1, " has ",
              prompts[i].size(), " tokens; the model's positions allow ", c.max_positions - 1);
    lengths.push_back(static_cast<int64_t>(prompts[i].size()));
  }
  std::vector<std::vector<Hypothesis>> out(prompts.size());
  std::vector<int64_t> sized(lengths.size());  // an empty prompt still takes a row
  std::transform(lengths.begin(), lengths.end(), sized.begin(), [](int64_t n) { return std::max<int64_t>(n, 1); });
  for (const auto& batch : token_batches(sized, std::max<int64_t>(1, o.max_tokens / search.beam))) {
    std::vector<int64_t> batch_lengths;
    TargetPrefixes batch_prompts;
    std::vector<const std::vector<int32_t>*> inputs;
    for (size_t j : batch) {
      batch_lengths.push_back(lengths[j]);
      batch_prompts.push_back(prompts[j]);
      inputs.push_back(&prompts[j]);
    }
    GraphOptions go;
    go.training = false;
    go.compute_dtype = o.dtype;
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = o.experts;
    const std::unique_ptr<DecoderState> state = lm.start(builder, Tensor(), Tensor());
    auto step = [&](const Tensor& prev) { return lm.step(builder, *state, prev).val(); };
    auto reorder = [&](const Tensor& origin) { state->reorder(builder, origin); };
    auto found = run_search(batch_lengths, inputs, step, reorder, search, batch_prompts);
    int64_t tokens = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      for (Hypothesis& h : found[k]) {
        const auto prompt = static_cast<std::ptrdiff_t>(lengths[batch[k]]);
        h.tokens.erase(h.tokens.begin(), h.tokens.begin() + prompt);
        h.token_scores.erase(h.token_scores.begin(), h.token_scores.begin() + prompt);
      }
      if (!found[k].empty()) tokens += static_cast<int64_t>(found[k][0].tokens.size());
      out[batch[k]] = std::move(found[k]);
    }
    if (on_batch) on_batch(static_cast<int64_t>(batch.size()), tokens);
  }
  return out;
}

}  // namespace moe
