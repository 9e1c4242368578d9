// moe-score with MAE checkpoints (issue 16), through the moe-score table: pairs --mae-inference
// mixture | argmax prints what score_pairs gives with the flags moe-translate sets for the same option
// (argmax scores differ from mixture ones), experts runs the argmax model with the option (later
// sites' gates change, the first one's do not), a bad value is a parse error naming the option and
// --help lists it; pairs, experts and ppl warn on stderr when the checkpoint's gates see future target
// tokens (gate_input paper at decoder sites, lm_self full_mean), and only then: not in an ensemble's stepwise scores.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "cli/mae_inference_option.h"
#include "models/model_registry.h"
#include "moe-score/score_program.h"
#include "tiny_model.h"
#include "translator/lm_perplexity.h"
#include "translator/pair_scores.h"

using namespace moe;

namespace {
struct Run {
  int rc = 0;
  std::string out, err;
};

Run run(std::vector<std::string> args) {
  const cli::SubcommandTable table = score_table();
  args.insert(args.begin(), "moe-score");
  std::ostringstream out, err;
  Run r;
  r.rc = table.run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

/// The log-probabilities of `pairs` output lines ("log_prob<TAB>tokens").
std::vector<double> log_probs(const std::string& out) {
  std::vector<double> v;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) v.push_back(std::stod(l.substr(0, l.find('\t'))));
  return v;
}

/// The entropy of `site` in `experts --format json` output.
double entropy(const std::string& out, const std::string& site) {
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    const YAML::Node n = YAML::Load(l);
    if (n["type"].as<std::string>() == "site" && n["site"].as<std::string>() == site) return n["entropy"].as<double>();
  }
  FAIL("no site " << site << " in\n" << out);
  return 0;
}

const std::vector<std::vector<int32_t>> kSrc = {{5, 6, 7}, {8, 9}, {10, 11, 12, 13}};
const std::vector<std::vector<int32_t>> kTgt = {{14, 15}, {16}, {17, 18, 19}};
const std::string kSrcText = "w1 w2 w3\nw4 w5\nw6 w7 w8 w9\n", kTgtText = "w10 w11\nw12\nw13 w14 w15\n";
}  // namespace

TEST_CASE("moe-score pairs and experts take --mae-inference", "[translator][pairs][experts][mae]") {
  auto m = test::tiny_model(17, 32, 4.f, "{type: mae, name: MAE-1}");
  const auto dir = test::temp_dir("mae-score");
  const std::string ckpt = test::save_tiny(m, dir);
  test::write_file(dir / "src.txt", kSrcText);
  test::write_file(dir / "tgt.txt", kTgtText);
  const std::vector<std::string> pairs = {
      "pairs", "-m", ckpt, "--src", (dir / "src.txt").string(), "--tgt", (dir / "tgt.txt").string(), "--device", "cpu"};
  std::map<std::string, std::vector<double>> got;
  for (const std::string mode : {"mixture", "argmax"}) {
    INFO(mode);
    auto args = pairs;
    args.insert(args.end(), {"--mae-inference", mode});
    const Run r = run(args);
    REQUIRE(r.rc == 0);
    CHECK(r.err.find("warning") == std::string::npos);  // leak-free gates: nothing to warn about
    got[mode] = log_probs(r.out);
    PairScoreOptions po;
    po.experts = cli::mae_inference_choice(mode);
    const auto want = score_pairs(*m.model, *m.params, Device::cpu(), kSrc, kTgt, po);
    REQUIRE(got[mode].size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[mode][i] == Approx(want[i].log_prob).margin(1e-5));
  }
  const Run plain = run(pairs);  // mixture is the default
  CHECK(log_probs(plain.out) == got["mixture"]);
  int differ = 0;
  for (size_t i = 0; i < got["mixture"].size(); ++i) differ += std::abs(got["mixture"][i] - got["argmax"][i]) > 1e-4;
  CHECK(differ > 0);

  // experts: the first site's gates read the embeddings either way; later sites read the argmax model's states.
  std::vector<std::string> experts = {
      "experts",  "-m",  ckpt, "--src", (dir / "src.txt").string(), "--tgt", (dir / "tgt.txt").string(),
      "--device", "cpu", "-f", "json"};
  const Run mix = run(experts);
  experts.insert(experts.end(), {"--mae-inference", "argmax"});
  const Run arg = run(experts);
  REQUIRE(mix.rc == 0);
  REQUIRE(arg.rc == 0);
  CHECK(entropy(arg.out, "encoder.l0.self_attn") == Approx(entropy(mix.out, "encoder.l0.self_attn")).margin(1e-9));
  CHECK(std::abs(entropy(arg.out, "encoder.l1.self_attn") - entropy(mix.out, "encoder.l1.self_attn")) > 1e-6);
  CHECK(std::abs(entropy(arg.out, "decoder.l1.cross_attn") - entropy(mix.out, "decoder.l1.cross_attn")) > 1e-6);

  // Bad values and --help.
  for (const std::string cmd : {"pairs", "experts"}) {
    INFO(cmd);
    auto args = cmd == "pairs" ? pairs : experts;
    args.insert(args.end(), {"--mae-inference", "top2"});
    const Run bad = run(args);
    CHECK(bad.rc != 0);
    CHECK_THAT(bad.err, Catch::Contains("--mae-inference") && Catch::Contains("top2"));
    const Run help = run({cmd, "--help"});
    CHECK(help.rc == 0);
    CHECK_THAT(help.out, Catch::Contains("--mae-inference") && Catch::Contains("argmax"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score warns when MAE gates see future target tokens", "[translator][pairs][experts][ppl][mae]") {
  const auto dir = test::temp_dir("mae-warn");
  test::write_file(dir / "src.txt", kSrcText);
  test::write_file(dir / "tgt.txt", kTgtText);
  for (const std::string att : {"{type: mae, name: MAE-1, gate_input: paper}", "{type: mae, name: MAE-1}",
                                "{type: mae, name: UNI-MAE-1, gate_input: paper}"}) {
    INFO(att);
    const bool leaks = att.find("paper") != std::string::npos && att.find("UNI") == std::string::npos;
    auto m = test::tiny_model(17, 32, 4.f, att);
    const std::string ckpt = test::save_tiny(m, dir);
    const Run pairs = run({"pairs", "-m", ckpt, "--src", (dir / "src.txt").string(), "--tgt",
                           (dir / "tgt.txt").string(), "--device", "cpu"});
    const Run experts = run({"experts", "-m", ckpt, "--src", (dir / "src.txt").string(), "--tgt",
                             (dir / "tgt.txt").string(), "--device", "cpu"});
    REQUIRE(pairs.rc == 0);
    REQUIRE(experts.rc == 0);
    CHECK(pairs.err.find("pairs: 3 lines") != std::string::npos);  // the summary still goes to stderr
    for (const Run* r : {&pairs, &experts}) {
      CHECK((r->err.find("warning") != std::string::npos) == leaks);
      if (leaks)
        CHECK_THAT(r->err, Catch::Contains("decoder_self, decoder_cross") && Catch::Contains("future target tokens") &&
                               Catch::Contains("leak_free"));
    }
    if (leaks) CHECK_THAT(pairs.err, Catch::StartsWith("moe-score pairs: warning: the MAE gates at decoder_self"));
    // An ensemble (here the model with itself) is scored step by step, where the gates read the prefix's mean as in
    // translation: no warning, and a leaking model's scores are not the teacher-forced pass's.
    const Run twice = run({"pairs", "-m", ckpt, "-m", ckpt, "--src", (dir / "src.txt").string(), "--tgt",
                           (dir / "tgt.txt").string(), "--device", "cpu"});
    REQUIRE(twice.rc == 0);
    CHECK(twice.err.find("warning") == std::string::npos);
    const std::vector<std::string> a = test::split_lines(pairs.out), b = test::split_lines(twice.out);
    REQUIRE(a.size() == b.size());
    double most = 0;  // the largest difference of a pair's log-prob
    for (size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(std::stod(a[i]) - std::stod(b[i])));
    CHECK((most > 1e-3) == leaks);
  }
  // A language model whose gates average whole rows: ppl warns; with the default gates it does not.
  data::WordVocab vocab(test::tiny_words());
  test::write_file(dir / "words.vocab", [] {
    std::string s;
    for (const auto& w : test::tiny_words()) s += w + "\n";
    return s;
  }());
  test::write_file(dir / "text.txt", kSrcText);
  for (const std::string att : {"{type: mae, name: MAE-1, gate_input: {lm_self: full_mean}}", "{type: mae}"}) {
    INFO(att);
    YAML::Node cfg = YAML::Load(
        "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0, "
        "max_positions: 64}");
    cfg["vocab"] = vocab.size();
    cfg["attention"] = YAML::Load(att);
    const auto lm = create_model(cfg);
    ParameterStore params(Device::cpu(), 3);
    lm_perplexity(*lm, params, Device::cpu(), lm_stream_of({"w1 w2"}, vocab), PerplexityOptions{});  // declares
    const std::string path = (dir / "lm.safetensors").string();
    save_checkpoint(path, *lm, params, {VocabFile::read("lm", (dir / "words.vocab").string())});
    const Run ppl = run({"ppl", "-m", path, "-i", (dir / "text.txt").string(), "--device", "cpu"});
    REQUIRE(ppl.rc == 0);
    const bool leaks = att.find("full_mean") != std::string::npos;
    CHECK((ppl.err.find("moe-score ppl: warning: the MAE gates at lm_self") != std::string::npos) == leaks);
    CHECK((ppl.err.find("warning") != std::string::npos) == leaks);
  }
  std::filesystem::remove_all(dir);
}
