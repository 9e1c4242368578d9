// Lexical shortlists (translator/shortlist.h, Decoder::restrict_output): a batch's list is the first ids, each
// source token's best translations above the threshold, the specials and the prefixes' tokens; the ids map to
// columns and back. For every translation family and an ensemble, the restricted steps equal the whole
// vocabulary's log-probabilities at the list's columns renormalised over them. The translator with a list of every
// id decodes as without one; with a short list it equals a search over the renormalised columns of the whole
// vocabulary, every output token is in the batch's list (beam search, sampling, int8 with its f32 copies
// released), and forced prefixes outside the lexical lists are kept. The language models (fused into a translation)
// restrict theirs the same way; one without an output matrix (an adaptive softmax) refuses.
#include "translator/shortlist.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "models/ensemble_decoder.h"
#include "models/inference_weights.h"
#include "tiny_model.h"
#include "translator/sampling_search.h"
#include "translator/translator.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}, {6, 6, 6}};
const std::vector<int32_t> kSpecials = {0, 1, 2, 3};

/// Source id s (4..23) translates to (s + 1) and (s + 7) modulo the 20 words, the first more probable.
data::LexicalTable test_table() {
  data::LexicalTable t;
  for (int32_t s = 4; s < 24; ++s) {
    t.entries.push_back({s, 4 + (s - 4 + 1) % 20, 0.6f});
    t.entries.push_back({s, 4 + (s - 4 + 7) % 20, 0.3f});
  }
  return t;
}

std::vector<const std::vector<int32_t>*> pointers(const std::vector<std::vector<int32_t>>& v) {
  std::vector<const std::vector<int32_t>*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

/// The search a shortlist should give, written out: the decoder's whole-vocabulary log-probabilities at the list's
/// columns, renormalised over them (in double), searched over the columns and mapped back.
std::vector<std::vector<Hypothesis>> reference_search(const Decoder& d, ParameterStore& params,
                                                      const std::vector<std::vector<int32_t>>& sources,
                                                      const Shortlist& shortlist, const BeamOptions& o,
                                                      const TargetPrefixes& prefixes = {}) {
  const int64_t B = static_cast<int64_t>(sources.size());
  int64_t S = 0;
  std::vector<int64_t> lengths;
  for (const auto& s : sources) lengths.push_back(static_cast<int64_t>(s.size()) + 1);
  for (int64_t len : lengths) S = std::max(S, len);
  std::vector<int32_t> ids(static_cast<size_t>(B * S), 0);
  std::vector<uint8_t> mask(static_cast<size_t>(B * S), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) {
      ids[b * S + t] = t + 1 < lengths[b] ? sources[b][t] : 3;
      mask[b * S + t] = 1;
    }
  Graph g(Device::cpu(), &params, GraphOptions{.training = false});
  Builder builder(g);
  auto state = d.start(builder, Tensor::from_vector(ids, Shape{B, S}), Tensor::from_vector(mask, Shape{B, S}));
  const BatchShortlist list = shortlist.batch(pointers(sources), prefixes, kSpecials);
  const std::vector<int32_t>& columns = list.ids();
  auto step = [&](const Tensor& prev_columns) {
    std::vector<int32_t> prev = prev_columns.to_vector<int32_t>();
    list.to_ids(prev);
    const Tensor full = d.step(builder, *state, Tensor::from_vector(prev, prev_columns.shape())).val();
    const int64_t n = full.shape()[0], v = full.shape()[1], w = static_cast<int64_t>(columns.size());
    const std::vector<float> lp = full.to_vector<float>();
    std::vector<float> out(static_cast<size_t>(n * w));
    for (int64_t r = 0; r < n; ++r) {
      double z = 0;
      for (int32_t c : columns) z += std::exp(static_cast<double>(lp[r * v + c]));
      for (int64_t j = 0; j < w; ++j) out[r * w + j] = static_cast<float>(lp[r * v + columns[j]] - std::log(z));
    }
    return Tensor::from_vector(out, Shape{n, w});
  };
  auto reorder = [&](const Tensor& origin) { state->reorder(builder, origin); };
  auto found = run_search(lengths, pointers(sources), step, reorder, list.to_columns(o), list.to_columns(prefixes));
  for (auto& hyps : found)
    for (Hypothesis& h : hyps) list.to_ids(h.tokens);
  return found;
}

void check_same(const std::vector<std::vector<Hypothesis>>& got, const std::vector<std::vector<Hypothesis>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    INFO("sentence " << s);
    REQUIRE(got[s].size() == want[s].size());
    for (size_t h = 0; h < got[s].size(); ++h) {
      CHECK(got[s][h].tokens == want[s][h].tokens);
      CHECK(got[s][h].log_prob == Approx(want[s][h].log_prob).margin(1e-4));
    }
  }
}

/// Every output token of sentence s is in the list of the batch of all sources.
void check_in_list(const std::vector<std::vector<Hypothesis>>& got, const Shortlist& shortlist) {
  const BatchShortlist list = shortlist.batch(pointers(kSources), {}, kSpecials);
  for (const auto& hyps : got)
    for (const Hypothesis& h : hyps)
      for (int32_t id : h.tokens) CHECK(std::binary_search(list.ids().begin(), list.ids().end(), id));
}
}  // namespace

TEST_CASE("shortlist: a batch's list and its columns", "[translator][shortlist]") {
  const Shortlist sl(test_table(), 24, {.first = 6, .best = 1, .threshold = 0});
  const std::vector<int32_t> a = {4, 9}, b = {23};
  // first 6 ids (0..5), 4 -> 5, 9 -> 10, 23 -> 4 (the best only), the prefix's 17 and 20
  const BatchShortlist list = sl.batch({&a, &b}, {{17}, {20, 17}}, kSpecials);
  CHECK(list.ids() == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 10, 17, 20});
  CHECK(list.column(17) == 7);
  CHECK((sl.lists() == 1 && sl.mean_width() == 9.0));  // the summary's figures
  CHECK_THROWS_WITH(list.column(6), Contains("id 6"));
  std::vector<int32_t> columns = {8, 0, 6};
  list.to_ids(columns);
  CHECK(columns == std::vector<int32_t>{20, 0, 10});
  CHECK(list.to_columns(TargetPrefixes{{17}, {20, 10}}) == TargetPrefixes{{7}, {8, 6}});
  BeamOptions o;
  o.pad_id = 0, o.bos_id = 2, o.eos_id = 3, o.unk_id = 1;
  const BeamOptions mapped = list.to_columns(o);
  CHECK((mapped.pad_id == 0 && mapped.unk_id == 1 && mapped.bos_id == 2 && mapped.eos_id == 3));
  const BeamOptions elsewhere = BatchShortlist({0, 4, 6, 9, 11}).to_columns([] {
    BeamOptions x;
    x.pad_id = 11, x.bos_id = 6, x.eos_id = 9, x.unk_id = -1;  // no <unk> known: stays -1
    return x;
  }());
  CHECK((elsewhere.pad_id == 4 && elsewhere.bos_id == 2 && elsewhere.eos_id == 3 && elsewhere.unk_id == -1));

  // best 2 with the threshold between the two translations keeps the first only; best 2 without keeps both
  CHECK(Shortlist(test_table(), 24, {.first = 0, .best = 2, .threshold = 0.5}).batch({&b}, {}, {}).ids() ==
        std::vector<int32_t>{4});
  CHECK(Shortlist(test_table(), 24, {.first = 0, .best = 2}).batch({&b}, {}, {}).ids() == std::vector<int32_t>{4, 10});
  // source ids the table does not know add nothing
  const std::vector<int32_t> unknown = {30};
  CHECK(Shortlist(test_table(), 24, {.first = 0}).batch({&unknown}, {}, {3}).ids() == std::vector<int32_t>{3});

  CHECK_THROWS_WITH(Shortlist(test_table(), 10, {}), Contains("outside the vocabulary of 10"));
  CHECK_THROWS_WITH(Shortlist(test_table(), 24, {.best = -1}), Contains("'best'"));
  data::LexicalTable unsorted = test_table();
  std::swap(unsorted.entries.front(), unsorted.entries.back());
  CHECK_THROWS_WITH(Shortlist(unsorted, 24, {}), Contains("not sorted"));
  CHECK_THROWS_WITH(BatchShortlist({3, 2}), Contains("ascending"));
}

TEST_CASE("restrict_output: each family's steps equal the whole vocabulary's columns renormalised",
          "[translator][shortlist]") {
  const std::vector<int32_t> columns = {0, 2, 3, 5, 8, 9, 13, 17, 21, 23};
  // the step's log-probs of `d` for two sources: after <s>, then after a reorder (row 1 duplicated) and two tokens
  auto steps = [&](const Decoder& d, ParameterStore& params, bool restrict) {
    Graph g(Device::cpu(), &params, GraphOptions{.training = false});
    Builder b(g);
    const Tensor src = Tensor::from_vector(std::vector<int32_t>{4, 9, 13, 3, 7, 3, 0, 0}, Shape{2, 4});
    const Tensor mask = Tensor::from_vector(std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 0, 0}, Shape{2, 4});
    auto state = d.start(b, src, mask);
    if (restrict)
      d.restrict_output(b, *state, Tensor::from_vector(columns, Shape{static_cast<int64_t>(columns.size())}));
    std::vector<float> out =
        d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{2, 2}, Shape{2})).val().to_vector<float>();
    state->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1}, Shape{2}));
    for (float x :
         d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{8, 13}, Shape{2})).val().to_vector<float>())
      out.push_back(x);
    return out;
  };
  auto check = [&](const Decoder& d, ParameterStore& params) {
    const std::vector<float> full = steps(d, params, false), restricted = steps(d, params, true);
    const size_t v = 24, w = columns.size(), rows = full.size() / v;
    REQUIRE(restricted.size() == rows * w);
    for (size_t r = 0; r < rows; ++r) {
      double z = 0;
      for (int32_t c : columns) z += std::exp(static_cast<double>(full[r * v + c]));
      for (size_t j = 0; j < w; ++j) {
        INFO("row " << r << ", column " << j);
        CHECK(restricted[r * w + j] == Approx(full[r * v + columns[j]] - std::log(z)).margin(2e-5));
      }
    }
  };
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      YAML::Node c = YAML::Clone(cfg);
      if (name == "transformer") c["tie_embeddings"] = "none";  // out.w of its own
      const test::TinyModel m = test::model_of(c, 3);
      check(m.net(), *m.params);
    }
  }
  SECTION("ensemble") {
    const test::TinyModel a = test::tiny_model(5), b = test::tiny_model(6);
    const EnsembleDecoder e({{&a.net(), a.params.get(), 1.0, "a"}, {&b.net(), b.params.get(), 3.0, "b"}});
    // the members' restricted log-probs (each renormalised over the list), averaged with the weights 1/4 and 3/4
    const std::vector<float> ra = steps(a.net(), *a.params, true), rb = steps(b.net(), *b.params, true);
    const std::vector<float> restricted = steps(e, *a.params, true);
    REQUIRE(restricted.size() == ra.size());
    for (size_t i = 0; i < ra.size(); ++i) CHECK(restricted[i] == Approx(0.25 * ra[i] + 0.75 * rb[i]).margin(1e-5));
  }
  for (const char* cfg :
       {"{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 2, dropout: 0.0, max_positions: 24}",
        "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, tie_embeddings: false}",
        "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 2, dropout: 0.0}",
        "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 1, dropout: 0.0, tie_embeddings: true}"}) {
    SECTION(cfg) {  // language models (fused into a translation: translator/translation_models.h)
      const test::TinyModel lm = test::lm_of(cfg, 4);
      CHECK(has_output_weight(*lm.model->decoder(), *lm.params));
      check(*lm.model->decoder(), *lm.params);
    }
  }
  SECTION("a model without an output layer (an adaptive softmax) refuses") {
    const test::TinyModel lm = test::tiny_adaptive_lm(4);
    CHECK_FALSE(has_output_weight(*lm.model->decoder(), *lm.params));
    Graph g(Device::cpu(), lm.params.get(), GraphOptions{.training = false});
    Builder b(g);
    auto state = lm.model->decoder()->start(b, Tensor(), Tensor());
    CHECK_THROWS_WITH(
        lm.model->decoder()->restrict_output(b, *state, Tensor::from_vector(std::vector<int32_t>{3}, Shape{1})),
        Contains("no output layer"));
  }
}

TEST_CASE("translator with a shortlist", "[translator][shortlist]") {
  const test::TinyModel m = test::tiny_model(13, 32, 4.f);
  TranslatorOptions o;
  o.search.beam = 4;
  o.search.n_best = 3;
  o.search.max_len_b = 8;
  o.search.unk_id = 1;
  const auto whole = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);

  SECTION("a list of every id decodes as without one") {
    const Shortlist every(test_table(), 24, {.first = 24});
    o.shortlist = &every;
    const auto got = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
    check_same(got, whole);
  }
  SECTION("a short list: the renormalised search over its columns") {
    const Shortlist sl(test_table(), 24, {.first = 4, .best = 2});
    o.shortlist = &sl;
    o.max_tokens = 1000;  // one batch, as the reference
    const auto got = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
    check_same(got, reference_search(m.net(), *m.params, kSources, sl,
                                     Translator(m.net(), *m.params, Device::cpu(), o).search_options()));
    check_in_list(got, sl);
    bool changed = false;  // the list changed something (some of the model's choices lie outside it)
    for (size_t i = 0; i < got.size(); ++i) changed |= got[i][0].tokens != whole[i][0].tokens;
    CHECK(changed);
    // a prefix outside every lexical list is forced all the same
    const TargetPrefixes prefixes = {{16, 16}, {}, {}, {12}};
    const auto forced = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources, {}, prefixes);
    CHECK(std::vector<int32_t>(forced[0][0].tokens.begin(), forced[0][0].tokens.begin() + 2) ==
          std::vector<int32_t>{16, 16});
    CHECK(forced[3][0].tokens.front() == 12);
  }
  SECTION("sampling and greedy without scores stay in the list") {
    const Shortlist sl(test_table(), 24, {.first = 4, .best = 1});
    o.shortlist = &sl;
    o.search.sampling = true;
    check_in_list(Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources), sl);
    o.search.sampling = false;
    o.search.beam = o.search.n_best = 1;
    o.scores = false;
    check_in_list(Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources), sl);
  }
  SECTION("int8 with its f32 copies released") {
    const auto dir = test::temp_dir("shortlist-int8");
    YAML::Node cfg = YAML::Clone(test::family_configs()[0].second);
    cfg["tie_embeddings"] = "none";
    const std::string path = test::save_tiny(test::model_of(cfg, 4), dir);
    const LoadedCheckpoint ck = load_checkpoint(path, Device::cpu());
    const InferenceWeights int8(ck, Quantize::int8, Device::cpu(), F32Copies::release);
    REQUIRE(int8.on());
    const Shortlist sl(test_table(), 24, {.first = 4, .best = 2});
    o.shortlist = &sl;
    const auto got = Translator(*ck.model->encoder_decoder(), *ck.params, Device::cpu(), o).translate(kSources);
    check_in_list(got, sl);
    for (const auto& hyps : got) CHECK(!hyps.empty());
  }
}
