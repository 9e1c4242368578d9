// moe-score ppl / pairs: the sliding-window perplexity with a stand-in language model whose loss is
// a known function of the scored targets (every token scored once, with enough history), forced
// decoding in padded batches equal to one-pair Model::loss (with word scores summing to each pair's), perplexity
// arithmetic, and the two subcommands through the moe-score table on a saved checkpoint (pairs --word-scores);
// pairs --alignment aligns a model's own
// translations as moe-translate --alignment does (an ensemble: with its first model).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "data/lm_stream.h"
#include "models/model_registry.h"
#include "moe-score/score_program.h"
#include "tiny_model.h"
#include "translator/lm_perplexity.h"
#include "translator/pair_scores.h"
#include "translator/translate_text.h"
#include "translator/translator.h"

using namespace moe;

namespace {
/// nll(target) = 0.1 * (id + 1) for each scored target; checks the window inputs and history.
class CostLm : public Model {
 public:
  std::string type() const override { return "cost_lm"; }
  YAML::Node config_yaml() const override { return YAML::Node(); }
  bool is_language_model() const override { return true; }
  Expr lm_loss(const Builder& b, const data::LmBatch& batch, float) const override {
    const auto in = batch.input.to_vector<int32_t>(), tg = batch.target.to_vector<int32_t>();
    const auto mask = batch.mask.to_vector<float>();
    const int64_t B = batch.input.shape()[0], T = batch.input.shape()[1];
    double sum = 0;
    for (int64_t r = 0; r < B; ++r) {
      int64_t history = 0;
      for (int64_t t = 0; t < T; ++t) {
        if (t > 0 && mask[r * T + t] != 0) CHECK(in[r * T + t] == tg[r * T + t - 1]);
        if (mask[r * T + t] != 0) {
          sum += 0.1 * (tg[r * T + t] + 1);
          min_history = std::min(min_history, first_window ? INT64_MAX : history);
        }
        ++history;
      }
      first_window = false;
    }
    return b.graph().input(Tensor::scalar(sum, DType::f32, Device::cpu()));
  }
  mutable int64_t min_history = INT64_MAX;
  mutable bool first_window = true;
};
}  // namespace

TEST_CASE("sliding-window perplexity scores every token once", "[translator][ppl]") {
  data::WordVocab vocab(test::tiny_words());
  const std::vector<std::string> lines = {"w1 w2 w3 w4", "", "w5 w6 w7 w8 w9 w10 w11", "w0 w19"};
  const auto stream = lm_stream_of(lines, vocab);
  REQUIRE(stream.size() == 4 + 1 + 1 + 7 + 1 + 2 + 1);
  CHECK(stream[4] == 3);
  CHECK(stream[5] == 3);
  double expected = 0;
  for (int32_t id : stream) expected += 0.1 * (id + 1);
  ParameterStore params(Device::cpu());
  for (auto [context, stride, batch] : {std::tuple{4, 2, 1}, {5, 1, 3}, {6, 0, 2}, {100, 0, 8}, {3, 3, 2}}) {
    INFO("context " << context << " stride " << stride << " batch " << batch);
    CostLm lm;
    PerplexityOptions o;
    o.context = context;
    o.stride = stride;
    o.batch_size = batch;
    std::vector<int64_t> progress;  // tokens scored after each batch: rising to the whole stream
    o.progress = [&progress](int64_t tokens) { progress.push_back(tokens); };
    const PerplexityResult r = lm_perplexity(lm, params, Device::cpu(), stream, o);
    CHECK(r.tokens == static_cast<int64_t>(stream.size()));
    REQUIRE(!progress.empty());
    CHECK(std::is_sorted(progress.begin(), progress.end()));
    CHECK(progress.back() == r.tokens);
    CHECK(r.nll == Approx(expected).epsilon(1e-6));
    CHECK(r.ppl() == Approx(std::exp(expected / static_cast<double>(stream.size()))).epsilon(1e-6));
    const int64_t s = stride > 0 ? stride : std::max(1, context / 2);
    if (static_cast<int64_t>(stream.size()) > context) CHECK(lm.min_history >= context - s);
  }
  PerplexityResult r;
  r.nll = 10;
  r.tokens = 5;
  r.words = 3;
  r.lines = 1;
  CHECK(r.ppl() == Approx(std::exp(2.0)));
  CHECK(r.word_ppl() == Approx(std::exp(2.5)));
  CHECK(std::isnan(PerplexityResult{}.ppl()));
  CostLm lm;
  PerplexityOptions bad;
  bad.context = 4;
  bad.stride = 5;
  CHECK_THROWS_WITH(lm_perplexity(lm, params, Device::cpu(), stream, bad), Catch::Contains("--stride 5"));
  auto tiny = test::tiny_model();
  CHECK_THROWS_WITH(lm_perplexity(*tiny.model, *tiny.params, Device::cpu(), stream, PerplexityOptions{}),
                    Catch::Contains("translation") && Catch::Contains("pairs"));
}

TEST_CASE("forced decoding in batches equals one pair at a time", "[translator][pairs]") {
  auto m = test::tiny_model(7);
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6}, {7}, {8, 9, 10, 11, 12, 13}, {14, 15}, {5}};
  const std::vector<std::vector<int32_t>> tgt = {{9, 9}, {}, {4, 5, 6, 7, 8}, {20}, {16, 17, 18, 19, 21, 22, 23}};
  PairScoreOptions batched;
  batched.max_tokens = 16;  // several batches of different padding
  const auto a = score_pairs(*m.model, *m.params, Device::cpu(), src, tgt, batched);
  PairScoreOptions single;
  single.per_pair = true;
  const auto b = score_pairs(*m.model, *m.params, Device::cpu(), src, tgt, single);
  REQUIRE(a.size() == src.size());
  double lp = 0;
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("pair " << i);
    CHECK(a[i].tokens == static_cast<int64_t>(tgt[i].size()) + 1);
    CHECK(b[i].tokens == a[i].tokens);
    CHECK(a[i].log_prob < 0);
    CHECK(a[i].log_prob == Approx(b[i].log_prob).epsilon(1e-5));
    // word scores: one per target token and </s>, summing to the pair's (the per-pair path has none)
    REQUIRE(static_cast<int64_t>(a[i].token_scores.size()) == a[i].tokens);
    double sum = 0;
    for (float x : a[i].token_scores) sum += x;
    CHECK(sum == Approx(a[i].log_prob).margin(1e-4));
    CHECK(b[i].token_scores.empty());
    lp += a[i].log_prob;
    n += a[i].tokens;
  }
  CHECK(corpus_perplexity(a) == Approx(std::exp(-lp / static_cast<double>(n))));
  CHECK(std::isnan(corpus_perplexity({})));
  CHECK_THROWS_WITH(score_pairs(*m.model, *m.params, Device::cpu(), src, {{1}}, batched),
                    Catch::Contains("5 source lines but 1 target"));
  const std::vector<std::vector<int32_t>> long_tgt = {std::vector<int32_t>(40, 5)};
  CHECK_THROWS_WITH(score_pairs(*m.model, *m.params, Device::cpu(), {{4}}, long_tgt, batched),
                    Catch::Contains("line 1") && Catch::Contains("max_positions = 32"));
}

TEST_CASE("moe-score pairs and ppl subcommands", "[translator][pairs][ppl]") {
  auto m = test::tiny_model(9);
  const auto dir = test::temp_dir("score");
  const std::string ckpt = test::save_tiny(m, dir);
  test::write_file(dir / "src.txt", "w1 w2 w3\n\nw4 w5\n");
  test::write_file(dir / "tgt.txt", "w6 w7\nw8\n\n");
  const cli::SubcommandTable table = score_table();
  std::ostringstream out, err;
  const std::string src = (dir / "src.txt").string(), tgt = (dir / "tgt.txt").string();
  REQUIRE(table.run({"moe-score", "pairs", "-m", ckpt, "--src", src, "--tgt", tgt, "--device", "cpu"}, out, err) == 0);
  std::istringstream lines(out.str());
  std::vector<std::pair<double, int64_t>> got;
  for (std::string l; std::getline(lines, l);) {
    const auto tab = l.find('\t');
    REQUIRE(tab != std::string::npos);
    got.emplace_back(std::stod(l.substr(0, tab)), std::stoll(l.substr(tab + 1)));
  }
  REQUIRE(got.size() == 3);
  const auto ref = score_pairs(*m.model, *m.params, Device::cpu(), {{5, 6, 7}, {}, {8, 9}}, {{10, 11}, {12}, {}},
                               PairScoreOptions{});
  for (size_t i = 0; i < 3; ++i) {
    CHECK(got[i].first == Approx(ref[i].log_prob).margin(1e-5));
    CHECK(got[i].second == ref[i].tokens);
  }
  std::ostringstream sum;
  REQUIRE(table.run({"moe-score", "pairs", "-m", ckpt, "--src", src, "--tgt", tgt, "--device", "cpu", "--summary"}, sum,
                    err) == 0);
  CHECK(sum.str().find("pairs: 3 lines, 6 target tokens") != std::string::npos);
  // --word-scores: a third field, each target token's log-prob
  std::ostringstream words;
  REQUIRE(table.run({"moe-score", "pairs", "-m", ckpt, "--src", src, "--tgt", tgt, "--device", "cpu", "--word-scores"},
                    words, err) == 0);
  std::istringstream word_lines(words.str());
  for (size_t i = 0; i < 3; ++i) {
    std::string l;
    REQUIRE(std::getline(word_lines, l));
    CHECK(l.substr(l.rfind('\t') + 1) == format_word_scores(ref[i].token_scores));
  }
  std::ostringstream none, both;
  CHECK(table.run({"moe-score", "pairs", "-m", ckpt, "--src", src, "--tgt", tgt, "--word-scores", "--summary"}, none,
                  both) != 0);
  // A translation checkpoint has no language-model loss: ppl says so.
  std::ostringstream out2, err2;
  CHECK(table.run({"moe-score", "ppl", "-m", ckpt, "-i", src, "--device", "cpu"}, out2, err2) == 1);
  CHECK(err2.str().find("moe-score ppl: error:") != std::string::npos);
  CHECK(err2.str().find("pairs") != std::string::npos);
  // Misaligned files are an error naming both.
  test::write_file(dir / "short.txt", "w1\n");
  std::ostringstream out3, err3;
  CHECK(table.run(
            {"moe-score", "pairs", "-m", ckpt, "--src", src, "--tgt", (dir / "short.txt").string(), "--device", "cpu"},
            out3, err3) == 1);
  CHECK(err3.str().find("has 3 lines but") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score ppl with a Transformer language model", "[translator][ppl]") {
  YAML::Node cfg;
  cfg["type"] = "transformer_lm";
  cfg["vocab"] = 24;
  cfg["d_model"] = 16;
  cfg["ffn_dim"] = 32;
  cfg["heads"] = 2;
  cfg["layers"] = 2;
  cfg["dropout"] = 0.0;
  cfg["max_positions"] = 64;
  std::unique_ptr<Model> lm;
  try {
    lm = create_model(cfg);
  } catch (const Error& e) {
    WARN("no transformer_lm in this build (" << e.what() << "): skipping");
    return;
  }
  REQUIRE(lm->is_language_model());
  ParameterStore params(Device::cpu(), 21);
  data::WordVocab vocab(test::tiny_words());
  std::vector<std::string> lines;
  for (int i = 0; i < 9; ++i) {
    std::string l;
    for (int w = 0; w < (i * 5) % 11; ++w) l += (w ? " w" : "w") + std::to_string((i * 3 + w * 7) % 20);
    lines.push_back(l);
  }
  const auto stream = lm_stream_of(lines, vocab);
  PerplexityOptions o;
  o.context = 12;
  o.stride = 5;
  o.batch_size = 1;
  const PerplexityResult one = lm_perplexity(*lm, params, Device::cpu(), stream, o);
  o.batch_size = 4;  // padded batches of windows give the same sums
  const PerplexityResult four = lm_perplexity(*lm, params, Device::cpu(), stream, o);
  CHECK(one.tokens == static_cast<int64_t>(stream.size()));
  CHECK(four.nll == Approx(one.nll).epsilon(1e-5));
  CHECK(one.ppl() > 1.0);
  // Through moe-score ppl on a saved checkpoint (vocabulary role "lm").
  const auto dir = test::temp_dir("ppl");
  std::ofstream(dir / "words.vocab") << [] {
    std::string s;
    for (const auto& w : test::tiny_words()) s += w + "\n";
    return s;
  }();
  save_checkpoint((dir / "lm.safetensors").string(), *lm, params,
                  {VocabFile::read("lm", (dir / "words.vocab").string())},
                  {{"moe.valid.context", "12"}, {"moe.valid.stride", "5"}});  // as moe-train stores them
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  test::write_file(dir / "text.txt", text);
  const cli::SubcommandTable table = score_table();
  std::ostringstream out, err;
  REQUIRE(table.run({"moe-score", "ppl", "-m", (dir / "lm.safetensors").string(), "-i", (dir / "text.txt").string(),
                     "--context", "12", "--stride", "5", "--device", "cpu", "-b"},
                    out, err) == 0);
  CHECK(std::stod(out.str()) == Approx(one.ppl()).epsilon(1e-4));
  std::ostringstream stored;  // no --context / --stride: the checkpoint's validation windows
  REQUIRE(table.run({"moe-score", "ppl", "-m", (dir / "lm.safetensors").string(), "-i", (dir / "text.txt").string(),
                     "--device", "cpu", "-b"},
                    stored, err) == 0);
  CHECK(std::stod(stored.str()) == Approx(one.ppl()).epsilon(1e-4));
  std::ostringstream json;
  REQUIRE(table.run({"moe-score", "ppl", "-m", (dir / "lm.safetensors").string(), "-i", (dir / "text.txt").string(),
                     "--context", "12", "--stride", "5", "--device", "cpu", "--format", "json"},
                    json, err) == 0);
  CHECK(json.str().find("\"tokens\": " + std::to_string(stream.size())) != std::string::npos);
  // A language model has no translation loss: pairs says so.
  std::ostringstream out2, err2;
  CHECK(table.run({"moe-score", "pairs", "-m", (dir / "lm.safetensors").string(), "--src", (dir / "text.txt").string(),
                   "--tgt", (dir / "text.txt").string(), "--device", "cpu"},
                  out2, err2) == 1);
  CHECK(err2.str().find("use moe-score ppl") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score pairs --alignment aligns as moe-translate --alignment", "[translator][pairs][alignment]") {
  const auto a = test::tiny_model(13, 32, 3.f), b = test::tiny_model(14, 32, 3.f);
  const auto dir = test::temp_dir("score-alignment");
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  const std::string ckpt_a = test::save_tiny(a, dir / "a"), ckpt_b = test::save_tiny(b, dir / "b");
  // The model's own translations, each with the alignment the translator gives it.
  const std::vector<std::string> sources = {"w1 w2 w3", "w4", "w5 w6 w7 w8 w9"};
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& s : sources) ids.push_back(a.vocab->encode(s));
  TranslatorOptions o;
  o.search.beam = 3;
  o.search.max_len_b = 6;
  o.alignment = true;
  const auto found = Translator(a.net(), *a.params, Device::cpu(), o).translate(ids);
  std::string src, tgt;
  for (size_t i = 0; i < sources.size(); ++i) {
    src += sources[i] + "\n";
    tgt += hypothesis_text(*a.vocab, found[i][0]) + "\n";
  }
  test::write_file(dir / "src.txt", src);
  test::write_file(dir / "tgt.txt", tgt);
  const cli::SubcommandTable table = score_table();
  const auto pairs = [&](std::vector<std::string> models, const std::string& mode) {
    std::vector<std::string> args = {"moe-score",   "pairs",
                                     "--src",       (dir / "src.txt").string(),
                                     "--tgt",       (dir / "tgt.txt").string(),
                                     "--device",    "cpu",
                                     "--alignment", mode};
    for (const std::string& m : models) args.insert(args.end(), {"-m", m});
    std::ostringstream out, err;
    REQUIRE(table.run(args, out, err) == 0);
    std::vector<std::string> third;  // the lines' alignment fields
    std::istringstream lines(out.str());
    for (std::string l; std::getline(lines, l);) {
      REQUIRE(std::count(l.begin(), l.end(), '\t') == 2);
      third.push_back(l.substr(l.rfind('\t') + 1));
    }
    return third;
  };
  for (const std::vector<std::string>& models : {std::vector<std::string>{ckpt_a}, {ckpt_a, ckpt_b}}) {
    INFO(models.size() << " model(s)");
    const auto hard = pairs(models, "hard"), threshold = pairs(models, "0.2");
    REQUIRE(hard.size() == sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      CHECK(hard[i] == format_alignment(found[i][0].alignment, AlignmentOutput{}));
      CHECK(threshold[i] == format_alignment(found[i][0].alignment, AlignmentOutput{AlignmentKind::threshold, 0.2f}));
    }
  }
  std::ostringstream out, err;
  CHECK(table.run({"moe-score", "pairs", "-m", ckpt_a, "--src", (dir / "src.txt").string(), "--tgt",
                   (dir / "tgt.txt").string(), "--alignment", "hard", "--summary"},
                  out, err) != 0);
  CHECK_THAT(err.str(), Catch::Contains("--summary") && Catch::Contains("--alignment"));
  std::filesystem::remove_all(dir);
}
