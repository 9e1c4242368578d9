// responses.h implementation. Covered by tests/serving/worker_test.cpp and tests/scripts/serve.sh.
#include "serving/responses.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "translator/lm_perplexity.h"
#include "translator/pair_alignment.h"
#include "translator/stepwise_scores.h"
#include "translator/target_prefix.h"
#include "translator/translate_text.h"

namespace moe::serving {

namespace {
using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::vector<std::vector<int32_t>> encode_lines(const data::Vocab& vocab, const std::vector<std::string>& lines,
                                               int64_t max_tokens, const char* field) {
  std::vector<std::vector<int32_t>> ids;
  for (size_t i = 0; i < lines.size(); ++i) {
    ids.push_back(vocab.encode(lines[i]));
    if (static_cast<int64_t>(ids.back().size()) > max_tokens)
      throw RequestError(std::string(field) + "[" + std::to_string(i) + "]",
                         "has " + std::to_string(ids.back().size()) + " tokens; the model takes at most " +
                             std::to_string(max_tokens) + " (model.max_positions - 1)");
  }
  return ids;
}

/// Floats as a JSON array, each rounded to 6 decimals (a float's 0.7f would print as 0.699999988079071).
json json_floats(const std::vector<float>& xs) {
  json out = json::array();
  for (float x : xs) out.push_back(std::round(static_cast<double>(x) * 1e6) / 1e6);
  return out;
}

/// An alignment as `o` gives it: soft, its rows of weights (json_floats); else its links as [source, output]
/// pairs (of words when o.words: `words` is read).
json alignment_json(const SoftAlignment& a, const AlignmentOutput& o, const TokenWords& words = {}) {
  json out = json::array();
  if (o.kind == AlignmentKind::soft) {
    for (const std::vector<float>& row : a) out.push_back(json_floats(row));
    return out;
  }
  for (const data::WordLink& l : alignment_links(a, o, words)) out.push_back({l.source, l.target});
  return out;
}

/// {"text", "score"} of `h` (an empty text scored 0 when there is none), with its "alignment" and "word_scores"
/// when asked for (`source_words`: token_words of its source, read for links between words).
json hypothesis_json(const data::Vocab& vocab, const Hypothesis* h, const OutputFields& fields,
                     const std::vector<int32_t>& source_words) {
  json out = {{"text", h ? hypothesis_text(vocab, *h) : std::string()}, {"score", h ? h->score : 0.0}};
  if (const auto& alignment = fields.alignment) {
    const TokenWords words{source_words,
                           h && alignment->words ? token_words(vocab, h->tokens) : std::vector<int32_t>()};
    out["alignment"] = alignment_json(h ? h->alignment : SoftAlignment{}, *alignment, words);
  }
  if (fields.word_scores) out["word_scores"] = json_floats(h ? h->token_scores : std::vector<float>());
  return out;
}

/// Per line {"text", "score"} of its best hypothesis, and with n_best > 1 "hypotheses": [{"text", "score"}];
/// `source_words[i]`: token_words of line i's source when alignment->words.
json best_lists(const data::Vocab& vocab, int n_best, const std::vector<std::vector<Hypothesis>>& hyps,
                const OutputFields& fields, const std::vector<std::vector<int32_t>>& source_words = {}) {
  json out = json::array();
  const std::vector<int32_t> none;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const auto& list = hyps[i];
    const std::vector<int32_t>& words = source_words.empty() ? none : source_words[i];
    json t = hypothesis_json(vocab, list.empty() ? nullptr : &list[0], fields, words);
    if (n_best > 1) {
      json all = json::array();
      for (const Hypothesis& h : list) all.push_back(hypothesis_json(vocab, &h, fields, words));
      t["hypotheses"] = std::move(all);
    }
    out.push_back(std::move(t));
  }
  return out;
}
}  // namespace

std::vector<std::vector<int32_t>> encode_request(const ServedModel& model, const TranslateRequest& request,
                                                 int64_t& truncated) {
  std::vector<std::vector<int32_t>> ids;
  truncated = 0;
  for (const std::string& line : request.text) {
    bool cut = false;
    ids.push_back(encode_source_line(*model.encoder, *model.src, line, cut));
    truncated += cut;
  }
  return ids;
}

TargetPrefixes encode_prefixes(const ServedModel& model, const TranslateRequest& request) {
  TargetPrefixes prefixes;
  for (const std::string& p : request.prefix) prefixes.push_back(model.tgt->encode(p));
  const BeamOptions& o = model.encoder->search_options();
  const auto refusal_of = [&o](const TargetPrefixes& list) {
    std::vector<int64_t> max_len(list.size(), 0);
    try {
      check_prefixes(list, static_cast<int64_t>(list.size()), o, max_len);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());  // naming "sentence i": line i of the request
    }
  };
  const std::string refusal = refusal_of(prefixes);
  if (refusal.empty()) return prefixes;
  size_t i = 0;  // the field: the first prefix refused on its own
  while (i + 1 < prefixes.size() && refusal_of({prefixes[i]}).empty()) ++i;
  throw RequestError("prefix[" + std::to_string(i) + "]", refusal);
}

std::string translate_body(const ServedModel& model, int n_best, const std::vector<std::vector<Hypothesis>>& hyps,
                           int64_t truncated, const OutputFields& fields,
                           const std::vector<std::vector<int32_t>>& sources) {
  std::vector<std::vector<int32_t>> source_words;
  if (fields.alignment && fields.alignment->words)
    for (const auto& ids : sources) source_words.push_back(token_words(*model.src, ids));
  return dump({{"model", model.name},
               {"translations", best_lists(*model.tgt, n_best, hyps, fields, source_words)},
               {"truncated", truncated}});
}

std::vector<std::vector<int32_t>> encode_prompts(const ServedModel& model, const GenerateRequest& request) {
  return encode_lines(*model.lm, request.text, model.ck.model->decoder()->spec().max_positions - 1, "text");
}

std::string generate_body(const ServedModel& model, int n_best, const std::vector<std::vector<Hypothesis>>& hyps,
                          bool word_scores) {
  return dump(
      {{"model", model.name}, {"generations", best_lists(*model.lm, n_best, hyps, {std::nullopt, word_scores})}});
}

void check_score_request(const ServedModel& model, const ScoreRequest& request) {
  if (model.translates() && request.src.empty())
    throw RequestError("text", "model '" + model.name + "' translates: give src and tgt, not text");
  if (!model.translates() && request.text.empty())
    throw RequestError("src", "model '" + model.name + "' is a language model: give text, not src and tgt");
}

std::string score_body(ServedModel& model, const ScoreRequest& request, Device device, DType dtype,
                       const ServedModel* lm) {
  if (!model.translates()) {
    PerplexityOptions o;
    o.dtype = dtype;
    if (model.ck.metadata.count("moe.valid.context")) o.context = std::stoll(model.ck.metadata.at("moe.valid.context"));
    if (model.ck.metadata.count("moe.valid.stride")) o.stride = std::stoll(model.ck.metadata.at("moe.valid.stride"));
    const PerplexityResult r =
        lm_perplexity(*model.ck.model, *model.ck.params, device, lm_stream_of(request.text, *model.lm), o,
                      model.lm->eos_id(), model.lm->pad_id());
    return dump({{"model", model.name}, {"tokens", r.tokens}, {"nll", r.nll}, {"perplexity", r.ppl()}});
  }
  const int64_t limit = translation_spec(*model.ck.model).max_positions - 1;
  const auto src = encode_lines(*model.src, request.src, limit, "src");
  const auto tgt = encode_lines(*model.tgt, request.tgt, limit, "tgt");
  PairScoreOptions o;
  o.dtype = dtype;
  o.experts = request.experts;
  const auto scores =
      lm ? score_pairs_stepwise(fused_decoder(model, *lm, request.lm.weight), *model.ck.params, device, src, tgt, o)
         : score_pairs(*model.ck.model, *model.ck.params, device, src, tgt, o);
  const std::vector<SoftAlignment> alignments =
      request.alignment ? align_pairs(*model.ck.model->encoder_decoder(), *model.ck.params, device, src, tgt, o)
                        : std::vector<SoftAlignment>();
  json list = json::array();
  double log_prob = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    list.push_back({{"log_prob", scores[i].log_prob}, {"tokens", scores[i].tokens}});
    if (request.word_scores) list.back()["word_scores"] = json_floats(scores[i].token_scores);
    if (request.alignment) {
      const TokenWords words = request.alignment->words
                                   ? TokenWords{token_words(*model.src, src[i]), token_words(*model.tgt, tgt[i])}
                                   : TokenWords{};
      list.back()["alignment"] = alignment_json(alignments[i], *request.alignment, words);
    }
    log_prob += scores[i].log_prob;
    tokens += scores[i].tokens;
  }
  return dump({{"model", model.name},
               {"scores", std::move(list)},
               {"log_prob", log_prob},
               {"tokens", tokens},
               {"perplexity", corpus_perplexity(scores)}});
}

std::string models_body(const std::vector<ServedModel>& models, Device device) {
  json list = json::array();
  for (const ServedModel& m : models)
    list.push_back({{"name", m.name},
                    {"path", m.path},
                    {"type", m.ck.model->type()},
                    {"kind", m.translates() ? "translation" : "language_model"},
                    {"device", device.str()}});
  return dump({{"models", std::move(list)}});
}

}  // namespace moe::serving
