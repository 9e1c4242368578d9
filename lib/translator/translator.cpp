// translator.h implementation. Covered by tests/translator/translator_test.cpp.
#include "translator/translator.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/error.h"
#include "translator/alignment.h"
#include "translator/sampling_search.h"

namespace moe {

TranslatorOptions translator_options(const DecodingOptions& o) {
  TranslatorOptions to;
  static_cast<SearchOptions&>(to.search) = o.search;
  to.max_tokens = translation_batch_tokens(o);
  to.dtype = dtype_of(o.dtype);
  return to;
}

std::vector<std::vector<size_t>> token_batches(const std::vector<int64_t>& lengths, int64_t max_tokens) {
  MOE_CHECK(max_tokens >= 1, "translate: --max-tokens must be positive, got ", max_tokens);
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  int64_t longest = 0;
  for (size_t i : order) {
    // Sorted longest first: the batch's padded length is the length of its first sentence.
    if (!batches.empty() && static_cast<int64_t>(batches.back().size() + 1) * longest <= max_tokens) {
      batches.back().push_back(i);
      continue;
    }
    batches.push_back({i});
    longest = std::max<int64_t>(lengths[i], 1);
  }
  return batches;
}

Translator::Translator(const Decoder& decoder, ParameterStore& params, Device device, TranslatorOptions options)
    : decoder_(decoder), params_(params), device_(device), o_(std::move(options)) {
  const DecoderSpec c = decoder_.spec();
  o_.search.pad_id = c.pad_id;
  o_.search.bos_id = c.bos_id;
  o_.search.eos_id = c.eos_id;
  o_.search.max_positions = c.max_positions;
  MOE_CHECK(params_.device() == device_, "translate: the parameters are on ", params_.device(), ", decoding on ",
            device_);
  MOE_CHECK(o_.dtype == DType::f32 || o_.dtype == DType::bf16 || o_.dtype == DType::f16,
            "translate: compute dtype must be f32, bf16 or f16, not ", dtype_name(o_.dtype));
}

std::vector<std::vector<Hypothesis>> Translator::translate_batch(
    const std::vector<const std::vector<int32_t>*>& sources, const TargetPrefixes& prefixes) const {
  const int64_t B = static_cast<int64_t>(sources.size());
  if (B == 0) return {};
  const DecoderSpec c = decoder_.spec();
  int64_t S = 0;
  std::vector<int64_t> lengths;
  for (const auto* s : sources) {
    MOE_CHECK(!s->empty(), "translate: an empty source cannot be decoded");
    const int64_t len = static_cast<int64_t>(s->size()) + 1;  // with </s>
    MOE_CHECK(len <= c.max_positions, "translate: a source of ", s->size(),
              " tokens (+ </s>) exceeds model.max_positions = ", c.max_positions);
    lengths.push_back(len);
    S = std::max(S, len);
  }
  std::vector<int32_t> ids(static_cast<size_t>(B * S), c.pad_id);
  std::vector<uint8_t> mask(static_cast<size_t>(B * S), 0);
  for (int64_t b = 0; b < B; ++b) {
    const auto& s = *sources[b];
    for (int64_t t = 0; t < lengths[b]; ++t) {
      ids[b * S + t] = t + 1 < lengths[b] ? s[t] : c.eos_id;
      mask[b * S + t] = 1;
    }
  }
  GraphOptions go;
  go.training = false;
  go.compute_dtype = o_.dtype;
  Graph g(device_, &params_, go);
  Builder builder(g);
  builder.context().experts = o_.experts;
  builder.context().comm = o_.comm;
  const std::unique_ptr<DecoderState> state = decoder_.start(builder, Tensor::from_vector(ids, Shape{B, S}, device_),
                                                             Tensor::from_vector(mask, Shape{B, S}, device_));
  // Greedy without scores: log-softmax changes no row's ranking (a row's scores shift by one constant), so the
  // search picks the same tokens from the logits (up to ties that rounding makes or breaks).
  const bool logits = o_.search.beam == 1 && !o_.scores && !o_.search.sampling;
  auto scores = [&](const Tensor& prev) {
    return (logits ? decoder_.step_logits(builder, *state, prev) : decoder_.step(builder, *state, prev)).val();
  };
  auto reorder = [&](const Tensor& origin) { state->reorder(builder, origin); };
  std::vector<std::vector<Hypothesis>> found;
  if (!o_.shortlist) {
    found = run_search(lengths, sources, scores, reorder, o_.search, prefixes);
  } else {  // the search over the list's columns: its ids in and out through the list
    const BeamOptions& o = o_.search;
    std::vector<int32_t> specials{o.pad_id, o.bos_id, o.eos_id};
    if (o.unk_id >= 0) specials.push_back(o.unk_id);
    const BatchShortlist list = o_.shortlist->batch(sources, prefixes, specials);
    const int64_t width = static_cast<int64_t>(list.ids().size());
    decoder_.restrict_output(builder, *state, Tensor::from_vector(list.ids(), Shape{width}, device_));
    auto step = [&](const Tensor& prev_columns) {
      std::vector<int32_t> prev = prev_columns.to_vector<int32_t>();
      list.to_ids(prev);
      return scores(Tensor::from_vector(prev, prev_columns.shape()));
    };
    found = run_search(lengths, sources, step, reorder, list.to_columns(o), list.to_columns(prefixes));
    for (auto& hypotheses : found)
      for (Hypothesis& h : hypotheses) list.to_ids(h.tokens);
  }
  if (logits)
    for (auto& list : found)
      for (Hypothesis& h : list) {
        h.log_prob = h.score = std::numeric_limits<double>::quiet_NaN();
        h.token_scores.clear();  // differences of logits, not log-probs
      }
  if (o_.alignment) align_hypotheses(decoder_, builder, sources, found);
  return found;
}

std::vector<std::vector<Hypothesis>> Translator::translate(
    const std::vector<std::vector<int32_t>>& sources,
    const std::function<void(int64_t sentences, int64_t target_tokens)>& on_batch,
    const TargetPrefixes& prefixes) const {
  MOE_CHECK(prefixes.empty() || prefixes.size() == sources.size(), "translate: ", prefixes.size(),
            " target prefixes for ", sources.size(), " sources");
  std::vector<std::vector<Hypothesis>> out(sources.size());
  std::vector<size_t> nonempty;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) continue;
    nonempty.push_back(i);
    lengths.push_back(static_cast<int64_t>(sources[i].size()) + 1);
  }
  // max_tokens counts the hypotheses' tokens: a beam of b holds b copies of each source's states.
  for (const auto& batch : token_batches(lengths, std::max<int64_t>(1, o_.max_tokens / o_.search.beam))) {
    std::vector<const std::vector<int32_t>*> srcs;
    TargetPrefixes batch_prefixes;
    for (size_t j : batch) {
      srcs.push_back(&sources[nonempty[j]]);
      if (!prefixes.empty()) batch_prefixes.push_back(prefixes[nonempty[j]]);
    }
    auto res = translate_batch(srcs, batch_prefixes);
    int64_t tokens = 0;
    for (size_t j = 0; j < batch.size(); ++j) {
      if (!res[j].empty()) tokens += static_cast<int64_t>(res[j][0].tokens.size());
      out[nonempty[batch[j]]] = std::move(res[j]);
    }
    if (on_batch) on_batch(static_cast<int64_t>(batch.size()), tokens);
  }
  return out;
}

}  // namespace moe
