// lm_perplexity.h implementation. Covered by tests/translator/scoring_test.cpp.
#include "translator/lm_perplexity.h"

#include <algorithm>
#include <cmath>

#include "data/lm_stream.h"
#include "models/lm_eval.h"
#include "models/model_registry.h"

namespace moe {

double PerplexityResult::ppl() const { return tokens > 0 ? std::exp(nll / static_cast<double>(tokens)) : NAN; }
double PerplexityResult::word_ppl() const {
  const int64_t n = words + lines;
  return n > 0 ? std::exp(nll / static_cast<double>(n)) : NAN;
}

std::vector<int32_t> lm_stream_of(const std::vector<std::string>& lines, const data::Vocab& vocab) {
  std::vector<int32_t> stream;
  for (const std::string& line : lines) {
    const auto ids = vocab.encode(line);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(vocab.eos_id());
  }
  return stream;
}

PerplexityResult lm_perplexity(const Model& model, ParameterStore& params, Device device,
                               const std::vector<int32_t>& stream, const PerplexityOptions& o, int32_t eos_id,
                               int32_t pad_id) {
  MOE_CHECK(model.is_language_model(), "ppl: the model is a ", model.type(),
            " (translation) model; use moe-score pairs for translation models");
  const ModelType* type = ModelRegistry::instance().find(model.type());
  MOE_CHECK(!type || type->kind != ModelKind::masked_lm, "ppl: a ", model.type(),
            " is a masked language model (it sees the "
            "tokens it would predict here); moe-score ppl scores left-to-right models (transformer_lm, lstm_lm)");
  MOE_CHECK(params.device() == device, "ppl: the parameters are on ", params.device(), ", scoring on ", device);
  MOE_CHECK(o.context >= 1, "ppl: --context must be positive, got ", o.context);
  const int64_t stride = o.stride > 0 ? o.stride : std::max<int64_t>(1, o.context / 2);
  MOE_CHECK(stride <= o.context, "ppl: --stride ", stride, " exceeds --context ", o.context);
  data::BatchUploader uploader(device);
  const LmEvalSum sum =
      lm_eval_sum(model, params, data::eval_batches(stream, o.context, stride, o.batch_size, eos_id, pad_id), o.dtype,
                  uploader, o.progress);
  PerplexityResult r;
  r.nll = sum.nll;
  r.tokens = sum.tokens;
  MOE_CHECK(r.tokens == static_cast<int64_t>(stream.size()), "ppl: scored ", r.tokens, " of ", stream.size(),
            " stream tokens (the evaluation windows must cover each token once)");
  return r;
}

}  // namespace moe
