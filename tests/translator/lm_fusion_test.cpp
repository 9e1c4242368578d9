// Shallow fusion of a language model (models/ensemble_decoder.h fused members, translator/translation_models.h,
// moe-translate and moe-score pairs --lm / --lm-weight) on tiny random models over the same 24 words: each step is
// the translation models' normalised average plus the weight times the LM's log-probs (checked against the members'
// own steps), a pair's fused score is its translation score plus the weight times the LM's score of the target,
// token by token, the beam's hypotheses carry the fused scores of their tokens, a heavy LM changes the translations,
// and the command lines give what the library gives; the errors (the weight, a translation model or another
// vocabulary as --lm, an adaptive softmax with --shortlist, --lm without --lm-weight) name what is wrong.
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "models/ensemble_decoder.h"
#include "moe-score/score_program.h"
#include "moe-translate/translate_cli.h"
#include "tiny_model.h"
#include "translator/stepwise_scores.h"
#include "translator/translate_text.h"
#include "translator/translation_models.h"
#include "translator/translator.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}, {6, 6, 6}, {10, 11}};
const std::vector<std::vector<int32_t>> kTargets = {{5, 6}, {8, 9, 10, 11}, {12}, {4, 4, 4, 4}, {19, 18, 17}};

EnsembleMember member(const test::TinyModel& m, double weight, const std::string& name, bool fused = false) {
  const Decoder* d = m.model->encoder_decoder() ? m.model->encoder_decoder() : m.model->decoder();
  return {d, m.params.get(), weight, name, fused};
}

/// Two steps' log-probs [2, V] of `d` for kSources[0..1]: after <s>, then after a reorder (row 1 twice) and 7, 8.
std::vector<float> two_steps(const Decoder& d, ParameterStore& params) {
  Graph g(Device::cpu(), &params, GraphOptions{.training = false});
  Builder b(g);
  const data::Batch batch = pair_batch(kSources, kTargets, {0, 1}, 0, 2, 3);
  auto state = d.start(b, batch.src, batch.src_mask);
  std::vector<float> out =
      d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{2, 2}, Shape{2})).val().to_vector<float>();
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1}, Shape{2}));
  for (float x : d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{7, 8}, Shape{2})).val().to_vector<float>())
    out.push_back(x);
  return out;
}
}  // namespace

TEST_CASE("a fused language model adds its weighted log-probabilities to each step", "[translator][lm_fusion]") {
  const auto a = test::tiny_model(13, 32, 4.f), b = test::tiny_model(21, 32, 4.f);
  const auto lm = test::tiny_lm(7);
  const EnsembleDecoder fused({member(a, 1.0, "a"), member(b, 3.0, "b"), member(lm, 0.3, "lm", true)});
  CHECK(fused.weights() == std::vector<float>{0.25f, 0.75f, 0.3f});  // the LM's weight is not normalised
  CHECK(fused.spec().max_positions == 24);                           // the LM's positions bound the search
  const auto la = two_steps(a.net(), *a.params), lb = two_steps(b.net(), *b.params);
  const auto ll = two_steps(*lm.model->decoder(), *lm.params), lf = two_steps(fused, *a.params);
  REQUIRE(lf.size() == la.size());
  for (size_t i = 0; i < la.size(); ++i) {
    INFO("entry " << i);
    if (std::isinf(la[i]))
      CHECK(std::isinf(lf[i]));
    else
      CHECK(lf[i] == Approx(0.25 * la[i] + 0.75 * lb[i] + 0.3 * ll[i]).margin(1e-5));
  }
  CHECK_THROWS_WITH(EnsembleDecoder({member(lm, 1.0, "lm", true), member(a, 1.0, "a")}),
                    Contains("first model, 'lm', is a fused language model"));
  CHECK_THROWS_WITH(EnsembleDecoder({member(a, 1.0, "a"), member(lm, 0.0, "lm", true)}),
                    Contains("weight of 'lm'") && Contains("positive"));
}

TEST_CASE("fused scores and searches: the translation's plus the weighted LM's", "[translator][lm_fusion]") {
  const auto tm = test::tiny_model(13, 32, 4.f);
  const auto lm = test::tiny_lm(7);
  const double w = 0.5;
  const EnsembleDecoder fused({member(tm, 1.0, "tm"), member(lm, w, "lm", true)});
  // Forced scores, token by token: the LM reads only the target (its source is ignored).
  const auto st = score_pairs_stepwise(tm.net(), *tm.params, Device::cpu(), kSources, kTargets, {});
  const auto sl = score_pairs_stepwise(*lm.model->decoder(), *lm.params, Device::cpu(), kSources, kTargets, {});
  const auto sf = score_pairs_stepwise(fused, *tm.params, Device::cpu(), kSources, kTargets, {});
  for (size_t i = 0; i < kSources.size(); ++i) {
    INFO("pair " << i);
    CHECK(sf[i].log_prob == Approx(st[i].log_prob + w * sl[i].log_prob).epsilon(1e-5));
    CHECK(sf[i].tokens == st[i].tokens);
    REQUIRE(sf[i].token_scores.size() == kTargets[i].size() + 1);
    for (size_t t = 0; t < sf[i].token_scores.size(); ++t)
      CHECK(sf[i].token_scores[t] == Approx(st[i].token_scores[t] + w * sl[i].token_scores[t]).margin(1e-5));
  }
  // Beam search: every hypothesis's log-prob is the fused score of its own tokens, and a heavy LM changes outputs.
  TranslatorOptions o;
  o.search.beam = 3;
  o.search.n_best = 2;
  o.search.max_len_b = 8;
  const auto hyps = Translator(fused, *tm.params, Device::cpu(), o).translate(kSources);
  std::vector<std::vector<int32_t>> outputs, sources;
  for (size_t s = 0; s < kSources.size(); ++s)
    for (const Hypothesis& h : hyps[s]) {
      outputs.push_back(h.tokens);
      sources.push_back(kSources[s]);
    }
  const auto rescored = score_pairs_stepwise(fused, *tm.params, Device::cpu(), sources, outputs, {});
  size_t k = 0;
  for (size_t s = 0; s < kSources.size(); ++s)
    for (const Hypothesis& h : hyps[s]) CHECK(h.log_prob == Approx(rescored[k++].log_prob).margin(1e-4));
  const auto plain = Translator(tm.net(), *tm.params, Device::cpu(), o).translate(kSources);
  const EnsembleDecoder heavy({member(tm, 1.0, "tm"), member(lm, 20.0, "lm", true)});
  const auto lm_led = Translator(heavy, *tm.params, Device::cpu(), o).translate(kSources);
  bool differs = false;
  for (size_t s = 0; s < kSources.size(); ++s) differs |= lm_led[s][0].tokens != plain[s][0].tokens;
  CHECK(differs);
}

TEST_CASE("moe-translate and moe-score pairs with --lm and --lm-weight", "[translator][lm_fusion][cli]") {
  const auto tm = test::tiny_model(13, 32, 4.f);
  const auto lm = test::tiny_lm(7);
  const auto dir = test::temp_dir("lm_fusion");
  for (const char* sub : {"tm", "lm", "other"}) std::filesystem::create_directories(dir / sub);
  const std::string ptm = test::save_tiny(tm, dir / "tm"), plm = test::save_tiny(lm, dir / "lm", {"lm"});
  const std::string input = "w1 w2 w3\nw4\n\nw9 w8 w7 w6\n";
  auto translate = [&](const LmFusion& fusion, std::optional<cli::ShortlistSpec> shortlist = {}) {
    TranslateCliOptions o;
    o.models = {ptm};
    o.lm = fusion;
    o.shortlist = std::move(shortlist);
    o.decoding.device = Device::cpu();
    o.quiet = true;
    o.word_scores = true;
    std::istringstream in(input);
    std::ostringstream out, err;
    run_translate(o, in, out, err);
    return test::split_lines(out.str());
  };
  // The library's fused translations of the same lines, with their word scores.
  const EnsembleDecoder fused({member(tm, 1.0, "tm"), member(lm, 0.5, "lm", true)});
  TranslatorOptions to = translator_options(DecodingOptions{});  // moe-translate's defaults
  to.scores = true;
  to.search.unk_id = tm.vocab->unk_id();
  const std::vector<std::string> lines = test::split_lines(input);
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& l : lines)
    if (!l.empty()) ids.push_back(tm.vocab->encode(l));
  const auto want = Translator(fused, *tm.params, Device::cpu(), to).translate(ids);
  const auto got = translate({plm, 0.5}), plain = translate({});
  REQUIRE(got.size() == lines.size());
  CHECK(got != plain);
  for (size_t i = 0, k = 0; i < lines.size(); ++i) {
    INFO("line " << i);
    if (lines[i].empty()) {  // not decoded
      CHECK(got[i] == plain[i]);
      continue;
    }
    const Hypothesis& h = want[k++][0];
    CHECK(got[i] == hypothesis_text(*tm.vocab, h) + " ||| " + format_word_scores(h.token_scores));
  }

  // Errors: the weight, a translation model as the LM, an LM over another vocabulary, an adaptive softmax with a
  // shortlist, one flag without the other.
  CHECK_THROWS_WITH(translate({plm, 0.0}), Contains("--lm-weight must be a positive number"));
  CHECK_THROWS_WITH(translate({plm, NAN}), Contains("--lm-weight must be a positive number"));
  CHECK_THROWS_WITH(translate({ptm, 0.5}), Contains("--lm '" + ptm + "' holds a transformer model") &&
                                               Contains("not a causal language model"));
  const std::string pother = test::save_tiny(lm, dir / "other", {"lm"}, test::swapped_words(2, 3));
  CHECK_THROWS_WITH(translate({pother, 0.5}), Contains("different target vocabularies") &&
                                                  Contains("first difference at id 6") &&
                                                  Contains("a fused language model must read"));
  // An adaptive softmax fuses, but a shortlist cannot restrict its output: refused before decoding.
  std::filesystem::create_directories(dir / "adaptive");
  const std::string padaptive = test::save_tiny(test::tiny_adaptive_lm(5), dir / "adaptive", {"lm"});
  test::write_file(dir / "lex.s2t", "w5 w1 0.5\n");
  const cli::ShortlistSpec list{(dir / "lex.s2t").string(), {.first = 4, .best = 1}};
  CHECK(translate({padaptive, 0.5}).size() == lines.size());
  CHECK(translate({plm, 0.5}, list).size() == lines.size());
  CHECK_THROWS_WITH(translate({padaptive, 0.5}, list),
                    Contains("--shortlist: the language model of --lm '" + padaptive + "' has an adaptive softmax"));
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--lm", plm}, {"--lm-weight", "0.5"}}) {
    CLI::App app;
    TranslateCliOptions o;
    add_translate_options(app, o);
    std::vector<std::string> args = {"-m", ptm};
    args.insert(args.end(), flags.begin(), flags.end());
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    CHECK_THROWS_AS(app.parse(args), CLI::RequiresError);
  }

  // moe-score pairs --lm: the library's fused stepwise scores.
  test::write_file(dir / "src.txt", "w1 w2 w3\nw4\nw9 w8 w7 w6\n");
  test::write_file(dir / "tgt.txt", "w5 w6\nw7 w8 w9\nw1\n");
  const std::vector<std::string> args = {"moe-score",   "pairs",
                                         "--device",    "cpu",
                                         "--src",       (dir / "src.txt").string(),
                                         "--tgt",       (dir / "tgt.txt").string(),
                                         "-m",          ptm,
                                         "--lm",        plm,
                                         "--lm-weight", "0.5"};
  std::ostringstream out, err;
  const int rc = score_table().run(args, out, err);
  INFO(err.str());
  REQUIRE(rc == 0);
  const auto encode = [&](const std::string& text) {
    std::vector<std::vector<int32_t>> r;
    for (const std::string& l : test::split_lines(text)) r.push_back(tm.vocab->encode(l));
    return r;
  };
  const auto scores = score_pairs_stepwise(fused, *tm.params, Device::cpu(), encode("w1 w2 w3\nw4\nw9 w8 w7 w6\n"),
                                           encode("w5 w6\nw7 w8 w9\nw1\n"), {});
  test::check_printed_scores(out.str(), scores);
  std::filesystem::remove_all(dir);
}
