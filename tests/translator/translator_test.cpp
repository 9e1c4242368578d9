// Translator with a tiny random Transformer: beam 1 equals greedy argmax decoding recomputed from
// scratch (teacher-forced decode of each prefix, no caches; also over the logits when no scores are wanted), a batch
// equals its sentences alone (also for an lstm_seq2seq with batchwise MoE layers, beam 5 and the GNMT length penalty,
// and for sampling: its samples, their order and log-probs),
// n-best lists are ordered and their log-probs equal forced decoding, token batching (source tokens x
// beam), and
// translate_lines keeps one output line per input line (empty lines, truncation, n-best); an MAE
// model (default, leak-free gates) decodes consistently with forced scoring, in mixture and argmax
// inference (score_pairs with the same flags), and mae.inference argmax changes it.
#include "translator/translator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "cli/mae_inference_option.h"
#include "graph/expr/cross_entropy.h"
#include "tiny_model.h"
#include "translator/pair_scores.h"
#include "translator/translate_text.h"

using namespace moe;

namespace {
const std::vector<std::vector<int32_t>> kSources = {
    {4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12}, {6, 6, 6}, {10, 11}};

/// Greedy decoding without caches: each step re-runs encode + decode on <s> + prefix.
std::pair<std::vector<int32_t>, double> greedy_reference(const test::TinyModel& m, const std::vector<int32_t>& src,
                                                         const BeamOptions& o) {
  const int64_t S = static_cast<int64_t>(src.size()) + 1;
  std::vector<int32_t> ids = src;
  ids.push_back(3);
  Tensor s = Tensor::from_vector(ids, Shape{1, S});
  Tensor mask = Tensor::from_vector(std::vector<uint8_t>(static_cast<size_t>(S), 1), Shape{1, S});
  const int64_t limit = max_output_length(S, o);
  std::vector<int32_t> prefix;
  double total = 0;
  for (;;) {
    std::vector<int32_t> in = {2};
    in.insert(in.end(), prefix.begin(), prefix.end());
    const int64_t T = static_cast<int64_t>(in.size());
    Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
    Builder b(g);
    Expr mem = m.net().encode(b, s, mask);
    const auto logits = m.net().decode(b, mem, mask, Tensor::from_vector(in, Shape{1, T})).val().to_vector<double>();
    const int64_t V = m.vocab->size();
    std::vector<double> row(logits.end() - V, logits.end());
    const double mx = *std::max_element(row.begin(), row.end());
    double z = 0;
    for (double x : row) z += std::exp(x - mx);
    for (double& x : row) x = x - mx - std::log(z);
    row[0] = row[2] = -INFINITY;
    if (static_cast<int64_t>(prefix.size()) < o.min_len) row[3] = -INFINITY;
    if (static_cast<int64_t>(prefix.size()) >= limit)
      for (int64_t t = 0; t < V; ++t)
        if (t != 3) row[t] = -INFINITY;
    const auto best = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    total += row[best];
    if (best == 3) break;
    prefix.push_back(best);
  }
  return {prefix, total};
}
}  // namespace

TEST_CASE("token batches respect the budget and sort by length", "[translator]") {
  const std::vector<int64_t> len = {3, 10, 1, 10, 4, 7};
  auto b = token_batches(len, 20);
  // Longest first (stable): 1, 3 (10 each) -> 2 x 10 = 20; then 5 (7), 4 (4): 2 x 7 <= 20, + 0: 3 x 7 > 20 ...
  REQUIRE(b.size() == 3);
  CHECK(b[0] == std::vector<size_t>{1, 3});
  CHECK(b[1] == std::vector<size_t>{5, 4});
  CHECK(b[2] == std::vector<size_t>{0, 2});
  // A sentence longer than the budget forms a batch of its own.
  CHECK(token_batches({50, 2}, 20) == std::vector<std::vector<size_t>>{{0}, {1}});
  CHECK(token_batches({}, 20).empty());
  CHECK_THROWS_WITH(token_batches({1}, 0), Catch::Contains("--max-tokens"));
}

TEST_CASE("a translator's max_tokens counts the hypotheses' tokens: source tokens x beam", "[translator]") {
  const auto m = test::tiny_model(13, 32, 4.f);
  // kSources with </s>: 12, 5, 4, 3, 2 tokens, longest first.
  auto batches = [&](int beam) {
    TranslatorOptions o;
    o.search.beam = beam;
    o.search.max_len_b = 4;
    o.max_tokens = 48;
    std::vector<int64_t> sizes;
    Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources, [&](int64_t n, int64_t) {
      sizes.push_back(n);
    });
    return sizes;
  };
  CHECK(batches(1) == std::vector<int64_t>{4, 1});     // 4 x 12 <= 48
  CHECK(batches(4) == std::vector<int64_t>{1, 2, 2});  // 12 source tokens: 12 | 2 x 5 | 2 x 3
}

TEST_CASE("beam 1 with the Transformer equals greedy decoding without caches", "[translator]") {
  for (auto [seed, eos_scale, min_len] : {std::tuple{5, 1.f, 1}, {13, 4.f, 1}, {7, 4.f, 1}, {13, 4.f, 3}}) {
    auto m = test::tiny_model(seed, 32, eos_scale);
    TranslatorOptions o;
    o.search.beam = 1;
    o.search.max_len_b = 9;
    o.search.min_len = min_len;
    Translator tr(m.net(), *m.params, Device::cpu(), o);
    const auto got = tr.translate(kSources);
    o.scores = false;  // the logits ranked (no log-softmax): the same tokens, no scores
    const auto tokens_only = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
    for (size_t s = 0; s < kSources.size(); ++s) {
      INFO("seed " << seed << " sentence " << s);
      auto [tokens, lp] = greedy_reference(m, kSources[s], tr.search_options());
      REQUIRE(got[s].size() == 1);
      CHECK(got[s][0].tokens == tokens);
      CHECK(got[s][0].log_prob == Approx(lp).margin(1e-4));
      CHECK(static_cast<int>(tokens.size()) >= min_len);
      REQUIRE(tokens_only[s].size() == 1);
      CHECK(tokens_only[s][0].tokens == tokens);
      CHECK((std::isnan(tokens_only[s][0].log_prob) && std::isnan(tokens_only[s][0].score)));
    }
  }
}

namespace {
/// Beam search over a batch gives each sentence the hypotheses and scores it gets alone and in small
/// batches, n-best lists are ordered, and the log-probs equal forced decoding of the same outputs.
void check_batched_equals_single(const test::TinyModel& m, TranslatorOptions o) {
  o.search.n_best = o.search.beam;
  o.search.max_len_b = 8;
  o.max_tokens = 1000;  // everything in one batch
  Translator tr(m.net(), *m.params, Device::cpu(), o);
  const auto batched = tr.translate(kSources);
  std::vector<std::vector<int32_t>> hyp_src, hyp_tgt;
  std::vector<double> hyp_lp;
  for (size_t s = 0; s < kSources.size(); ++s) {
    INFO("sentence " << s);
    const auto alone = tr.translate({kSources[s]})[0];
    REQUIRE(alone.size() == batched[s].size());
    REQUIRE(!alone.empty());
    for (size_t h = 0; h < alone.size(); ++h) {
      CHECK(alone[h].tokens == batched[s][h].tokens);
      CHECK(alone[h].score == Approx(batched[s][h].score).margin(1e-4));
      if (h > 0) CHECK(batched[s][h - 1].score >= batched[s][h].score);
      CHECK(batched[s][h].score ==
            Approx(normalized_score(batched[s][h].log_prob, static_cast<int64_t>(batched[s][h].tokens.size()) + 1,
                                    o.search.penalty, o.search.lenpen)));
      hyp_src.push_back(kSources[s]);
      hyp_tgt.push_back(batched[s][h].tokens);
      hyp_lp.push_back(batched[s][h].log_prob);
    }
  }
  // </s> ends some hypotheses before the maximum length of 8.
  CHECK(std::any_of(hyp_tgt.begin(), hyp_tgt.end(), [](const auto& t) { return t.size() < 8; }));
  // The search's accumulated log-probs equal teacher-forced scoring of the same outputs.
  const auto forced = score_pairs(*m.model, *m.params, Device::cpu(), hyp_src, hyp_tgt, PairScoreOptions{});
  for (size_t i = 0; i < forced.size(); ++i) {
    INFO("hypothesis " << i);
    CHECK(forced[i].log_prob == Approx(hyp_lp[i]).margin(1e-4));
    CHECK(forced[i].tokens == static_cast<int64_t>(hyp_tgt[i].size()) + 1);
  }
  // Small token budgets give many batches and the same results in input order.
  o.max_tokens = 6;
  Translator small(m.net(), *m.params, Device::cpu(), o);
  const auto split = small.translate(kSources);
  for (size_t s = 0; s < kSources.size(); ++s) CHECK(split[s][0].tokens == batched[s][0].tokens);
}
}  // namespace

TEST_CASE("batched beam search equals sentence-by-sentence and forced decoding", "[translator]") {
  TranslatorOptions o;
  o.search.beam = 4;
  check_batched_equals_single(test::tiny_model(13, 32, 4.f), o);
}

TEST_CASE("sampling: a batch samples as its sentences alone, log-probs equal forced decoding",
          "[translator][sampling]") {
  TranslatorOptions o;
  o.search.sampling = true;
  o.search.beam = 4;
  o.search.temperature = 1.3;
  o.search.sampling_topp = 0.95;
  check_batched_equals_single(test::tiny_model(13, 32, 4.f), o);
}

TEST_CASE("an lstm_seq2seq decodes with beam 5 and the GNMT length penalty, batch = single", "[translator][seq2seq]") {
  TranslatorOptions o;
  o.search.beam = 5;
  o.search.penalty = LengthPenalty::gnmt;
  o.search.lenpen = 0.6;
  check_batched_equals_single(test::tiny_model(13, 32, 4.f, "", "lstm_seq2seq"), o);
}

TEST_CASE("an MAE model decodes; argmax inference uses the most-weighted expert", "[translator][mae]") {
  // The default gate inputs (leak_free): forced decoding with the same choice scores what the search found.
  auto m = test::tiny_model(17, 32, 4.f, "{type: mae, name: MAE-1}");
  TranslatorOptions o;
  o.search.beam = 3;
  o.search.max_len_b = 8;
  auto forced_scores_match = [&](const std::vector<std::vector<Hypothesis>>& found) {
    std::vector<std::vector<int32_t>> tgt;
    for (const auto& h : found) tgt.push_back(h[0].tokens);
    PairScoreOptions po;
    po.experts = o.experts;
    const auto forced = score_pairs(*m.model, *m.params, Device::cpu(), kSources, tgt, po);
    for (size_t s = 0; s < kSources.size(); ++s) CHECK(forced[s].log_prob == Approx(found[s][0].log_prob).margin(1e-4));
  };
  const auto mixture = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
  forced_scores_match(mixture);
  o.experts = ExpertChoice::argmax;
  const auto argmax = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
  forced_scores_match(argmax);
  int differ = 0;
  for (size_t s = 0; s < kSources.size(); ++s)
    differ += std::abs(argmax[s][0].log_prob - mixture[s][0].log_prob) > 1e-6;
  CHECK(differ > 0);
  CHECK_THROWS_WITH(cli::mae_inference_choice("best"), Catch::Contains("--mae-inference") && Catch::Contains("'best'"));
  CHECK_THROWS_WITH(cli::mae_inference_choice("sample"), Catch::Contains("mixture, argmax"));
}

TEST_CASE("translate_lines keeps one line per input line", "[translator]") {
  auto m = test::tiny_model(3, 8);  // max_positions 8: sources of at most 7 tokens
  TranslatorOptions o;
  o.search.beam = 3;
  o.search.n_best = 2;
  o.search.max_len_b = 5;
  Translator tr(m.net(), *m.params, Device::cpu(), o);
  const std::vector<std::string> lines = {"w1 w2 w3", "", "   ", "w4 w5 w6 w7 w8 w9 w10 w11 w12 w13", "w0", ""};
  TranslateStats st;
  const auto out = translate_lines(tr, *m.vocab, *m.vocab, lines, 1, 0, st);
  REQUIRE(out.size() == lines.size());
  CHECK(out[1].empty());
  CHECK(out[2].empty());
  CHECK(out[5].empty());
  CHECK(!out[0].empty());
  CHECK(st.lines == 6);
  CHECK(st.empty_lines == 3);
  CHECK(st.truncated == 1);
  CHECK(st.src_words == 3 + 10 + 1);
  CHECK(st.src_tokens == 3 + 7 + 1);
  // The truncated line translates like its first 7 tokens.
  TranslateStats st2;
  CHECK(translate_lines(tr, *m.vocab, *m.vocab, {"w4 w5 w6 w7 w8 w9 w10"}, 1, 0, st2)[0] == out[3]);
  // Outputs are words of the vocabulary (no specials).
  for (const auto& l : out) CHECK(l.find("<") == std::string::npos);

  TranslateStats st3;
  const auto nb = translate_lines(tr, *m.vocab, *m.vocab, lines, 2, 100, st3);
  REQUIRE(nb.size() == 2 * lines.size());
  CHECK(nb[0].rfind("100\t", 0) == 0);
  CHECK(nb[2] == "101\t0.000000\t");
  CHECK(nb[3] == "101\t-inf\t");
  CHECK(nb[11].rfind("105\t", 0) == 0);
  // The first of each n-best pair is the 1-best output; scores descend.
  auto field = [](const std::string& s, int i) {
    size_t a = 0;
    for (int k = 0; k < i; ++k) a = s.find('\t', a) + 1;
    return s.substr(a, s.find('\t', a) == std::string::npos ? std::string::npos : s.find('\t', a) - a);
  };
  CHECK(field(nb[0], 2) == out[0]);
  CHECK(std::stod(field(nb[0], 1)) >= std::stod(field(nb[1], 1)));
}

TEST_CASE("translator argument errors", "[translator]") {
  auto m = test::tiny_model(3, 8);
  Translator tr(m.net(), *m.params, Device::cpu(), TranslatorOptions{});
  const std::vector<int32_t> too_long(8, 5), empty;
  CHECK_THROWS_WITH(tr.translate_batch({&too_long}), Catch::Contains("max_positions = 8"));
  CHECK_THROWS_WITH(tr.translate_batch({&empty}), Catch::Contains("empty source"));
  const auto none = tr.translate({{}, {}});
  REQUIRE(none.size() == 2);
  CHECK(none[0].empty());
  CHECK(none[1].empty());
  TranslatorOptions bad;
  bad.dtype = DType::i32;
  CHECK_THROWS_WITH(Translator(m.net(), *m.params, Device::cpu(), bad), Catch::Contains("f32, bf16 or f16"));
}
