// pair_scores.h implementation. Covered by tests/translator/scoring_test.cpp.
#include "translator/pair_scores.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "data/batch.h"
#include "graph/expr/cross_entropy.h"
#include "models/decoder.h"
#include "translator/translator.h"

namespace moe {

namespace {
data::Batch on_device(const data::Batch& b, Device d) {
  data::Batch out = b;
  for (auto field : data::kBatchTensors)
    if ((b.*field).defined()) out.*field = (b.*field).to(d);
  return out;
}
}  // namespace

data::Batch pair_batch(const std::vector<std::vector<int32_t>>& src, const std::vector<std::vector<int32_t>>& tgt,
                       const std::vector<size_t>& idx, int32_t pad_id, int32_t bos_id, int32_t eos_id) {
  std::vector<std::span<const int32_t>> s, t;
  std::vector<int64_t> ids;
  for (size_t i : idx) {
    s.emplace_back(src[i]);
    t.emplace_back(tgt[i]);
    ids.push_back(static_cast<int64_t>(i));
  }
  return data::make_batch(s, t, ids, pad_id, bos_id, eos_id);
}

DecoderSpec translation_spec(const Model& model) {
  if (const Decoder* d = model.decoder()) return d->spec();
  const YAML::Node cfg = model.config_yaml();
  auto get = [&](const char* key, int64_t fallback) { return cfg && cfg[key] ? cfg[key].as<int64_t>() : fallback; };
  return {.pad_id = static_cast<int32_t>(get("pad_id", 0)),
          .bos_id = static_cast<int32_t>(get("bos_id", 2)),
          .eos_id = static_cast<int32_t>(get("eos_id", 3)),
          .max_positions = get("max_positions", INT64_MAX)};
}

double corpus_perplexity(const std::vector<PairScore>& scores) {
  double lp = 0;
  int64_t n = 0;
  for (const PairScore& s : scores) {
    lp += s.log_prob;
    n += s.tokens;
  }
  return n > 0 ? std::exp(-lp / static_cast<double>(n)) : NAN;
}

std::vector<int64_t> pair_costs(const std::vector<std::vector<int32_t>>& src,
                                const std::vector<std::vector<int32_t>>& tgt, const DecoderSpec& spec) {
  MOE_CHECK(src.size() == tgt.size(), "pairs: ", src.size(), " source lines but ", tgt.size(), " target lines");
  std::vector<int64_t> cost(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t s = static_cast<int64_t>(src[i].size()) + 1, t = static_cast<int64_t>(tgt[i].size()) + 1;
    MOE_CHECK(s <= spec.max_positions && t <= spec.max_positions, "pairs: line ", i + 1, " has ", s, " source and ",
              t, " target tokens (with </s>), more than model.max_positions = ", spec.max_positions);
    cost[i] = std::max(s, t);
  }
  return cost;
}

std::vector<PairScore> score_pairs(const Model& model, ParameterStore& params, Device device,
                                   const std::vector<std::vector<int32_t>>& src,
                                   const std::vector<std::vector<int32_t>>& tgt, const PairScoreOptions& o) {
  MOE_CHECK(!model.is_language_model(), "pairs: the model is a ", model.type(),
            " language model; use moe-score ppl for language models");
  MOE_CHECK(params.device() == device, "pairs: the parameters are on ", params.device(), ", scoring on ", device);
  const DecoderSpec spec = translation_spec(model);
  const int32_t pad = spec.pad_id, bos = spec.bos_id, eos = spec.eos_id;
  const std::vector<int64_t> cost = pair_costs(src, tgt, spec);
  const GraphOptions go{.training = false, .compute_dtype = o.dtype};
  std::vector<PairScore> out(src.size());
  const EncoderDecoder* net = o.per_pair ? nullptr : model.encoder_decoder();
  const auto batches = net ? token_batches(cost, o.max_tokens) : std::vector<std::vector<size_t>>{};
  if (!net) {
    for (size_t i = 0; i < src.size(); ++i) {
      const data::Batch b = data::make_batch({std::span<const int32_t>(src[i])}, {std::span<const int32_t>(tgt[i])},
                                             {static_cast<int64_t>(i)}, pad, bos, eos);
      Graph g(device, &params, go);
      Builder builder(g);
      builder.context().experts = o.experts;
      out[i] = {-model.loss(builder, on_device(b, device), 0.f).val().item(), b.tgt_tokens, {}};
      if (o.after_batch) o.after_batch();
    }
    return out;
  }
  for (const auto& idx : batches) {
    const data::Batch b = on_device(pair_batch(src, tgt, idx, pad, bos, eos), device);
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = o.experts;
    Expr memory = net->encode(builder, b.src, b.src_mask);
    Expr logits = net->decode(builder, memory, b.src_mask, b.tgt_in);
    Expr targets = g.input(b.tgt_out.view(Shape{b.tgt_out.numel()}));
    const std::vector<double> nll = cross_entropy(logits, targets, 0.f, pad).val().to_vector<double>();
    const int64_t T = b.tgt_out.shape()[1];
    for (size_t r = 0; r < idx.size(); ++r) {
      PairScore& score = out[idx[r]];
      score.tokens = b.tgt_lengths[r];
      for (int64_t k = 0; k < b.tgt_lengths[r]; ++k) {
        score.log_prob -= nll[r * T + k];
        score.token_scores.push_back(static_cast<float>(-nll[r * T + k]));
      }
    }
    if (o.after_batch) o.after_batch();
  }
  return out;
}

}  // namespace moe
