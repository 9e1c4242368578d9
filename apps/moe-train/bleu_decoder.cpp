// bleu_decoder.h implementation. Covered by tests/training/bleu_validation_test.cpp.
#include "moe-train/bleu_decoder.h"

#include "common/error.h"
#include "translator/translator.h"

namespace moe {

BleuDecoder translator_bleu_decoder(const ValidOptions& valid) {
  TranslatorOptions to = translator_options(valid.decoding);
  to.search.n_best = 1;
  to.scores = false;
  return [to](const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
              const std::vector<std::vector<int32_t>>& sources, const BuildContext& context) {
    const EncoderDecoder* net = model.encoder_decoder();
    MOE_CHECK(net, "BLEU validation: model type '", model.type(), "' has no encoder-decoder to decode with");
    TranslatorOptions o = to;
    o.dtype = compute_dtype;
    o.comm = context.comm;
    o.search.unk_id = tgt_vocab.unk_id();
    const Translator translator(*net, store, store.device(), o);
    std::vector<std::vector<int32_t>> cut = sources;
    for (auto& s : cut)
      if (static_cast<int64_t>(s.size()) > translator.max_source_tokens())
        s.resize(static_cast<size_t>(translator.max_source_tokens()));
    std::vector<std::vector<int32_t>> best;
    best.reserve(cut.size());
    for (auto& list : translator.translate(cut)) best.push_back(list.empty() ? std::vector<int32_t>() : list[0].tokens);
    return best;
  };
}

}  // namespace moe
