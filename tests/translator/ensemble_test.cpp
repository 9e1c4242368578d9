// Ensembles (models/ensemble_decoder.h, translator/translation_models.h, moe-translate and
// moe-score pairs with several -m) on tiny random Transformers: a model ensembled with itself
// decodes and scores exactly as the model (beam 4, n-best, greedy, forced scoring), two different
// models give each step's weighted average of their log-probs (checked against the members' own
// steps) and a translation that differs from both, step-by-step forced scoring equals the
// teacher-forced pass, int8 ensembles (each member's weights quantized and active at once) behave
// the same way, and the errors (vocabularies, weights, specials) name the files.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "models/ensemble_decoder.h"
#include "moe-score/score_program.h"
#include "moe-translate/translate_cli.h"
#include "tiny_model.h"
#include "translator/stepwise_scores.h"
#include "translator/translation_models.h"
#include "translator/translator.h"

using namespace moe;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}, {6, 6, 6}, {10, 11}};
const std::vector<std::vector<int32_t>> kTargets = {{5, 6}, {8, 9, 10, 11}, {12}, {4, 4, 4, 4}, {19, 18, 17}};

EnsembleDecoder ensemble_of(const test::TinyModel& a, const test::TinyModel& b, double wa, double wb) {
  return EnsembleDecoder({{&a.net(), a.params.get(), wa, "a"}, {&b.net(), b.params.get(), wb, "b"}});
}

/// One step's log-probs [N, V] of `d` after <s> for kSources[0..1] (batched).
std::vector<float> first_step(const Decoder& d, ParameterStore& params) {
  Graph g(Device::cpu(), &params, GraphOptions{.training = false});
  Builder b(g);
  const data::Batch batch = pair_batch(kSources, kTargets, {0, 1}, 0, 2, 3);
  auto state = d.start(b, batch.src, batch.src_mask);
  const Tensor prev = Tensor::from_vector(std::vector<int32_t>{2, 2}, Shape{2});
  const Tensor lp1 = d.step(b, *state, prev).val();
  // A second step after a reorder (row 1 duplicated) exercises every member's state.
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1}, Shape{2}));
  const Tensor lp2 = d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{7, 8}, Shape{2})).val();
  std::vector<float> out = lp1.to_vector<float>();
  for (float x : lp2.to_vector<float>()) out.push_back(x);
  return out;
}
}  // namespace

TEST_CASE("a model ensembled with itself decodes and scores exactly as the model", "[translator][ensemble]") {
  const auto m = test::tiny_model(13, 32, 4.f);
  const EnsembleDecoder self = ensemble_of(m, m, 0.5, 0.5);
  CHECK(self.spec().vocab == m.net().spec().vocab);
  for (int beam : {1, 4}) {
    TranslatorOptions o;
    o.search.beam = beam;
    o.search.n_best = beam;
    const auto alone = Translator(m.net(), *m.params, Device::cpu(), o).translate(kSources);
    const auto both = Translator(self, *m.params, Device::cpu(), o).translate(kSources);
    for (size_t s = 0; s < kSources.size(); ++s) {
      REQUIRE(alone[s].size() == both[s].size());
      for (size_t h = 0; h < alone[s].size(); ++h) {
        CHECK(alone[s][h].tokens == both[s][h].tokens);
        CHECK(alone[s][h].log_prob == both[s][h].log_prob);
        CHECK(alone[s][h].score == both[s][h].score);
      }
    }
  }
  const auto one = score_pairs_stepwise(m.net(), *m.params, Device::cpu(), kSources, kTargets, {});
  const auto two = score_pairs_stepwise(self, *m.params, Device::cpu(), kSources, kTargets, {});
  const auto forced = score_pairs(*m.model, *m.params, Device::cpu(), kSources, kTargets, {});
  for (size_t i = 0; i < kSources.size(); ++i) {
    CHECK(one[i].log_prob == two[i].log_prob);
    CHECK(one[i].tokens == two[i].tokens);
    CHECK(one[i].tokens == static_cast<int64_t>(kTargets[i].size()) + 1);
    CHECK(one[i].log_prob == Approx(forced[i].log_prob).epsilon(1e-5));  // step by step = teacher-forced
    REQUIRE(one[i].token_scores.size() == forced[i].token_scores.size());  // and so are the word scores
    for (size_t t = 0; t < one[i].token_scores.size(); ++t)
      CHECK(one[i].token_scores[t] == Approx(forced[i].token_scores[t]).margin(1e-5));
  }
}

TEST_CASE("an ensemble of two models averages their log-probabilities", "[translator][ensemble]") {
  const auto a = test::tiny_model(13, 32, 4.f), b = test::tiny_model(21, 32, 4.f);
  const EnsembleDecoder ab = ensemble_of(a, b, 1.0, 3.0);  // normalised: 0.25, 0.75
  CHECK(ab.weights() == std::vector<float>{0.25f, 0.75f});
  const auto la = first_step(a.net(), *a.params), lb = first_step(b.net(), *b.params);
  const auto lab = first_step(ab, *a.params);
  REQUIRE(lab.size() == la.size());
  double max_diff = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    if (std::isinf(la[i])) {
      CHECK(std::isinf(lab[i]));
      continue;
    }
    CHECK(lab[i] == Approx(0.25 * la[i] + 0.75 * lb[i]).margin(1e-5));
    max_diff = std::max(max_diff, std::abs(static_cast<double>(la[i]) - lb[i]));
  }
  CHECK(max_diff > 0.1);  // the members differ, so the average is a new distribution
  CHECK_THROWS_WITH(ensemble_of(a, b, 1.0, 0.0), Catch::Contains("weight of 'b'") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(EnsembleDecoder({}), Catch::Contains("no model"));
  // Scores: the weighted average of the members' step-by-step scores, token by token.
  const auto sa = score_pairs_stepwise(a.net(), *a.params, Device::cpu(), kSources, kTargets, {});
  const auto sb = score_pairs_stepwise(b.net(), *b.params, Device::cpu(), kSources, kTargets, {});
  const auto sab = score_pairs_stepwise(ab, *a.params, Device::cpu(), kSources, kTargets, {});
  for (size_t i = 0; i < kSources.size(); ++i)
    CHECK(sab[i].log_prob == Approx(0.25 * sa[i].log_prob + 0.75 * sb[i].log_prob).epsilon(1e-5));
  // Beam search over the ensemble differs from each member somewhere.
  TranslatorOptions o;
  o.search.beam = 4;
  const auto ta = Translator(a.net(), *a.params, Device::cpu(), o).translate(kSources);
  const auto tb = Translator(b.net(), *b.params, Device::cpu(), o).translate(kSources);
  const auto tab = Translator(ab, *a.params, Device::cpu(), o).translate(kSources);
  bool differs_a = false, differs_b = false;
  for (size_t s = 0; s < kSources.size(); ++s) {
    differs_a |= tab[s][0].tokens != ta[s][0].tokens || tab[s][0].log_prob != ta[s][0].log_prob;
    differs_b |= tab[s][0].tokens != tb[s][0].tokens || tab[s][0].log_prob != tb[s][0].log_prob;
  }
  CHECK(differs_a);
  CHECK(differs_b);
}

TEST_CASE("moe-translate and moe-score pairs with several -m", "[translator][ensemble][cli]") {
  const auto a = test::tiny_model(13, 16, 4.f), b = test::tiny_model(21, 16, 4.f);
  const auto dir = test::temp_dir("ensemble");
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  const std::string pa = test::save_tiny(a, dir / "a"), pb = test::save_tiny(b, dir / "b");
  const std::string input = "w1 w2 w3\nw4\n\nw9 w8 w7 w6\n";
  auto translate = [&](std::vector<std::string> models, std::vector<double> weights,
                       Quantize quantize = Quantize::none) {
    TranslateCliOptions o;
    o.models = std::move(models);
    o.weights = std::move(weights);
    o.quantize = quantize;
    o.decoding.device = Device::cpu();
    o.quiet = true;
    o.decoding.search.n_best = 2;
    std::istringstream in(input);
    std::ostringstream out, err;
    run_translate(o, in, out, err);
    return out.str();
  };
  CHECK(translate({pa, pa}, {}) == translate({pa}, {}));
  CHECK(translate({pa, pa}, {0.5, 0.5}) == translate({pa}, {}));
  const std::string ab = translate({pa, pb}, {});
  CHECK(ab != translate({pa}, {}));
  CHECK(ab != translate({pb}, {}));
  CHECK(ab == translate({pa, pb}, {2, 2}));  // normalised
  // int8: both members' quantized weights are active at once, each found by its own tensor.
  CHECK(translate({pa, pa}, {}, Quantize::int8) == translate({pa}, {}, Quantize::int8));
  CHECK(translate({pa, pb}, {}, Quantize::int8) == translate({pa, pb}, {2, 2}, Quantize::int8));

  // Errors: weights, vocabularies.
  CHECK_THROWS_WITH(translate({pa, pb}, {0.5}), Catch::Contains("--weights has 1 value(s) for 2 model(s)"));
  CHECK_THROWS_WITH(translate({pa, pb}, {0.5, -1}),
                    Catch::Contains("weight of '" + pb + "'") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(translate({pa, pb}, {0.5, NAN}), Catch::Contains("positive"));
  std::filesystem::create_directories(dir / "c");
  // a model whose vocabulary lists the same words in another order
  const std::string pc =
      test::save_tiny(test::tiny_model(13, 16), dir / "c", {"src", "tgt"}, test::swapped_words(0, 1));
  CHECK_THROWS_WITH(translate({pa, pc}, {}), Catch::Contains("'" + pc + "' and '" + pa + "'") &&
                                                 Catch::Contains("different source vocabularies") &&
                                                 Catch::Contains("first difference at id 4"));

  // moe-score pairs: the ensemble of a model with itself scores as the model does step by step.
  test::write_file(dir / "src.txt", "w1 w2 w3\nw4\nw9 w8 w7 w6\n");
  test::write_file(dir / "tgt.txt", "w5 w6\nw7 w8 w9\nw1\n");
  auto pairs = [&](std::vector<std::string> models, const std::string& extra = "") {
    const std::string src = (dir / "src.txt").string(), tgt = (dir / "tgt.txt").string();
    std::vector<std::string> args = {"moe-score", "pairs", "--device", "cpu", "--src", src, "--tgt", tgt};
    for (const auto& p : models) args.insert(args.end(), {"-m", p});
    if (!extra.empty()) args.insert(args.end(), {"--weights", extra});
    std::ostringstream out, err;
    const int rc = score_table().run(args, out, err);
    INFO(err.str());
    REQUIRE(rc == 0);
    return out.str();
  };
  const std::string self = pairs({pa, pa});
  const auto ids = [&](const std::string& text) {
    std::vector<std::vector<int32_t>> out;
    std::istringstream is(text);
    for (std::string l; std::getline(is, l);) out.push_back(a.vocab->encode(l));
    return out;
  };
  const auto stepwise = score_pairs_stepwise(a.net(), *a.params, Device::cpu(), ids("w1 w2 w3\nw4\nw9 w8 w7 w6\n"),
                                             ids("w5 w6\nw7 w8 w9\nw1\n"), {});
  // Equal up to rounding: the members run in graphs of their own over the reloaded checkpoint.
  test::check_printed_scores(self, stepwise);
  CHECK(pairs({pa, pb}, "1,3") != pairs({pa, pb}));
  std::filesystem::remove_all(dir);
}
