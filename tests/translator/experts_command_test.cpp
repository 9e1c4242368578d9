// moe-score experts end to end on tiny models built here, through the moe-score table and its JSON:
// an MAE-7 Transformer whose first encoder gate is set by hand (sentences of even words go to expert 1,
// of odd words to expert 2: exact shares, CV, max/mean and PMI), the same on its own translations (-i);
// UNI-MAE-7 (entropy = ln 8 at every site); MoE FFN sites of a Transformer LM and an LSTM LM and MoA
// sites of a Transformer with zero-initialised routers (ties: uniform gates over the first experts, so
// every number is exact); a randomised MoA router (invariants); the text report, --help and the error
// for a model without gated sites; PMI units (pieces, SentencePiece words, masked positions).
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "models/model_registry.h"
#include "moe-score/score_program.h"
#include "tiny_model.h"
#include "translator/expert_analysis.h"

using namespace moe;

namespace {
/// A model of `yaml` over the tiny word vocabulary, its parameters declared by one inference pass.
test::TinyModel build(const std::string& yaml, uint64_t seed = 3) {
  test::TinyModel m;
  m.vocab = std::make_unique<data::WordVocab>(test::tiny_words());
  YAML::Node cfg = YAML::Load(yaml);
  const bool lm = cfg["type"].as<std::string>() != "transformer";
  cfg[lm ? "vocab" : "src_vocab"] = m.vocab->size();
  if (!lm) cfg["tgt_vocab"] = m.vocab->size();
  m.model = create_model(cfg);
  m.params = std::make_unique<ParameterStore>(Device::cpu(), seed);
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  Builder b(g);
  const std::vector<int32_t> x = {4, 5, 6}, y = {7, 8};
  if (lm)
    m.model->lm_loss(b, data::make_lm_batch({x}, {x}, {{1.f, 1.f, 1.f}}, {0}, 0), 0.f);
  else
    m.model->loss(b, data::make_batch({std::span<const int32_t>(x)}, {std::span<const int32_t>(y)}, {0}, 0, 2, 3), 0.f);
  return m;
}

std::string save_lm(const test::TinyModel& m, const std::filesystem::path& dir) {
  const auto vocab = dir / "lm.vocab";
  std::ofstream v(vocab);
  for (const auto& w : test::tiny_words()) v << w << "\n";
  v.close();
  const std::string path = (dir / "lm.safetensors").string();
  save_checkpoint(path, *m.model, *m.params, {VocabFile::read("lm", vocab.string())});
  return path;
}

void set(ParameterStore& p, const std::string& name, const std::vector<std::pair<int64_t, float>>& entries) {
  Tensor t = p.value(name);
  std::vector<float> v(static_cast<size_t>(t.numel()), 0.f);
  for (auto [i, x] : entries) v[static_cast<size_t>(i)] = x;
  t.copy_from(Tensor::from_vector(v, t.shape()));
}

struct Run {
  int rc = 0;
  std::string out, err;
  std::vector<YAML::Node> json;  // --format json: the parsed lines
  YAML::Node site(const std::string& name) const {
    for (const auto& n : json)
      if (n["type"].as<std::string>() == "site" && n["site"].as<std::string>() == name) return n;
    FAIL("no site " << name << " in\n" << out);
    return {};
  }
  YAML::Node summary() const { return json.back(); }
};

Run run(std::vector<std::string> args) {
  const cli::SubcommandTable table = score_table();
  args.insert(args.begin(), {"moe-score", "experts", "--device", "cpu"});
  std::ostringstream out, err;
  Run r;
  r.rc = table.run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  if (r.rc == 0 && r.out.starts_with("{")) {
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) r.json.push_back(YAML::Load(l));
  }
  return r;
}

std::vector<double> doubles(const YAML::Node& n) { return n.as<std::vector<double>>(); }

/// A tiny Transformer (d = 16, one decoder layer) with `heads` heads, `enc` encoder layers and `attention`.
std::string mt(int heads, int enc, const std::string& attention) {
  return "{type: transformer, d_model: 16, ffn_dim: 32, heads: " + std::to_string(heads) +
         ", enc_layers: " + std::to_string(enc) +
         ", dec_layers: 1, dropout: 0.0, max_positions: 32, attention: " + attention + "}";
}

/// Writes dir/src.txt and dir/tgt.txt; returns {"--src", path, "--tgt", path}.
std::vector<std::string> pair_files(const std::filesystem::path& dir, const std::string& src, const std::string& tgt) {
  test::write_file(dir / "src.txt", src);
  test::write_file(dir / "tgt.txt", tgt);
  return {"--src", (dir / "src.txt").string(), "--tgt", (dir / "tgt.txt").string()};
}
}  // namespace

TEST_CASE("moe-score experts: MAE-7 with a hand-set gate", "[translator][experts]") {
  auto m = build(mt(8, 1, "{type: mae, name: MAE-7, gate_hidden: 4}"));
  // Column 0 of the source embedding: +1 for w0, w2, ... (ids 4, 6, ...), -1 for odd words, 0 for </s>.
  // The gate reads u_0 = the sentence mean of column 0 (x 4 from the embedding scale, positions in
  // [-1, 1]): hidden unit 0 = tanh(10 u_0), expert 1's logit +10 of it, expert 2's -10.
  std::vector<std::pair<int64_t, float>> col;
  for (int64_t id = 0; id < 24; ++id)
    for (int64_t c = 0; c < 16; ++c)
      col.push_back({id * 16 + c, c == 0 ? (id < 4 ? 0.f : (id % 2 == 0 ? 1.f : -1.f)) : 0.01f * float(id + c)});
  set(*m.params, "embed.src", col);
  set(*m.params, "encoder.l0.self_attn.gate.l1.w", {{0, 10.f}});
  set(*m.params, "encoder.l0.self_attn.gate.l1.b", {});
  set(*m.params, "encoder.l0.self_attn.gate.l2.w", {{1, 10.f}, {2, -10.f}});
  set(*m.params, "encoder.l0.self_attn.gate.l2.b", {});
  const auto dir = test::temp_dir("experts-mae");
  const std::string ckpt = test::save_tiny(m, dir);
  const auto files = pair_files(dir, "w0 w2 w4\nw6 w8\nw10 w12 w14 w16\nw1 w3\n", "w5 w7\nw9\nw0 w1 w2\nw3\n");
  const std::string src = files[1], tgt = files[3];

  for (const bool given : {true, false}) {
    INFO((given ? "--src/--tgt" : "-i: on its own translations"));
    const Run r = given ? run({"-m", ckpt, "--src", src, "--tgt", tgt, "--min-count", "1", "--format", "json"})
                        : run({"-m", ckpt, "-i", src, "--min-count", "1", "--format", "json"});
    REQUIRE(r.rc == 0);
    REQUIRE(r.json.size() == 4);  // encoder self, decoder self and cross, summary
    const YAML::Node enc = r.site("encoder.l0.self_attn");
    CHECK(enc["group"].as<std::string>() == "encoder");
    CHECK(enc["layer"].as<int>() == 0);
    CHECK(enc["family"].as<std::string>() == "mae");
    CHECK(enc["granularity"].as<std::string>() == "sentence");
    CHECK(enc["experts"].as<int>() == 8);
    CHECK(enc["instances"].as<int>() == 4);
    CHECK(doubles(enc["argmax_share"]) == std::vector<double>{0, 0.75, 0.25, 0, 0, 0, 0, 0});
    // shares s: mean 1/8, population variance (6/64 + 25/64 + 1/64) / 8 = 1/16: CV = 2; max/mean = 6.
    CHECK(enc["argmax_cv"].as<double>() == Approx(2.0).epsilon(1e-12));
    CHECK(enc["argmax_max_over_mean"].as<double>() == Approx(6.0).epsilon(1e-12));
    CHECK(enc["entropy"].as<double>() < 0.01);  // saturated gates
    CHECK(enc["max_entropy"].as<double>() == Approx(std::log(8.0)));
    CHECK(!enc["routed_share"]);
    // PMI over the 15 source tokens (x </s>): 12 attributed to expert 1, 3 to expert 2. w1 occurs once,
    // with expert 2: ln(15 / 3); </s> 3 of 4 times with expert 1: ln(3 * 15 / (4 * 12)).
    const YAML::Node e2 = enc["top_tokens"][2];
    REQUIRE(e2.size() == 3);
    CHECK(enc["pmi_events"].as<int>() == 15);
    CHECK(e2[0]["pmi"].as<double>() == Approx(std::log(5.0)));
    CHECK(e2[0]["token"].as<std::string>() == "w1");  // w1 and w3 tie; the text decides
    CHECK(e2[2]["token"].as<std::string>() == "</s>");
    CHECK(e2[2]["pmi"].as<double>() == Approx(std::log(15.0 / 12)));
    const YAML::Node e1 = enc["top_tokens"][1];
    CHECK(e1.size() == 10);
    CHECK(e1[9]["token"].as<std::string>() == "</s>");
    CHECK(e1[9]["pmi"].as<double>() == Approx(std::log(45.0 / 48)));
    CHECK(enc["top_tokens"][0].size() == 0);
    const YAML::Node dec = r.site("decoder.l0.cross_attn");
    CHECK(dec["group"].as<std::string>() == "decoder");
    // Decoder gates read the causal prefix mean by default (gate_input leak_free): one instance per
    // target position (<s> y), i.e. per target token (until issue 16: per sentence, 4 instances).
    CHECK(dec["policy"].as<std::string>() == "causal_prefix_mean");
    CHECK(dec["granularity"].as<std::string>() == "token");
    const YAML::Node sum = r.summary();
    CHECK(dec["instances"].as<int>() == sum["tgt_tokens"].as<int>());
    CHECK(sum["type"].as<std::string>() == "summary");
    CHECK(sum["input"].as<std::string>() == (given ? "pairs" : "hypotheses"));
    CHECK(sum["sentences"].as<int>() == 4);
    CHECK(sum["src_tokens"].as<int>() == 15);
    if (given) CHECK(sum["tgt_tokens"].as<int>() == 11);
    CHECK(sum["groups"]["encoder"]["entropy"].as<double>() == Approx(enc["entropy"].as<double>()));
    CHECK(sum["groups"]["decoder"]["sites"].as<int>() == 2);
  }
  // The text report: the same table.
  const Run text = run({"-m", ckpt, "--src", src, "--tgt", tgt});
  REQUIRE(text.rc == 0);
  CHECK(text.out.find("== encoder.l0.self_attn [encoder, layer 0, mae full_mean; one gate per sentence]") !=
        std::string::npos);
  CHECK(text.out.find("  e1        75.00") != std::string::npos);
  CHECK(text.out.find("balance: argmax CV 2.000, max/mean 6.000") != std::string::npos);
  CHECK(text.out.find("teacher forcing on the given targets") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score experts: UNI-MAE-7 has entropy ln 8 everywhere", "[translator][experts]") {
  auto m = build(mt(8, 2, "{type: mae, name: UNI-MAE-7}"));
  const auto dir = test::temp_dir("experts-uni");
  const std::string ckpt = test::save_tiny(m, dir);
  std::vector<std::string> args = pair_files(dir, "w0 w2 w4\nw6 w8\n\nw1\n", "w5 w7\nw9\nw0\n\n");
  args.insert(args.end(), {"-m", ckpt, "-f", "json"});
  const Run r = run(args);
  REQUIRE(r.rc == 0);
  REQUIRE(r.json.size() == 5);
  for (size_t i = 0; i + 1 < r.json.size(); ++i) {
    INFO(r.json[i]["site"].as<std::string>());
    CHECK(r.json[i]["policy"].as<std::string>() == "uniform");
    CHECK(r.json[i]["entropy"].as<double>() == Approx(std::log(8.0)).margin(1e-12));
    CHECK(r.json[i]["importance_cv"].as<double>() == Approx(0.0).margin(1e-7));
  }
  CHECK(r.summary()["entropy"].as<double>() == Approx(std::log(8.0)).margin(1e-12));
  CHECK(r.summary()["groups"]["encoder"]["max_entropy"].as<double>() == Approx(std::log(8.0)));
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score experts: MoE FFN language models with zero gates", "[translator][experts]") {
  // W_g = 0: every token ties, the top 2 are experts 0 and 1 with gates 1/2 each.
  for (const char* yaml : {"{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 2, dropout: 0.0, "
                           "max_positions: 64, ffn: {type: moe, experts: 4, k: 2, hidden: 8}}",
                           "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 2, dropout: 0.0, moe_after: [0], "
                           "moe: {type: moe, experts: 4, k: 2, hidden: 8}}"}) {
    INFO(yaml);
    auto m = build(yaml);
    const auto dir = test::temp_dir("experts-moe");
    const std::string ckpt = save_lm(m, dir);
    test::write_file(dir / "text.txt", "w1 w2 w3 w4\n\nw5 w6 w7 w8 w9 w10 w11\nw0 w19\n");
    const Run r = run({"-m", ckpt, "-i", (dir / "text.txt").string(), "--context", "6", "--stride", "3", "--max-tokens",
                       "12", "--format", "json"});
    REQUIRE(r.rc == 0);
    const bool lstm = std::string(yaml).find("lstm") != std::string::npos;
    REQUIRE(r.json.size() == (lstm ? 2u : 3u));
    const YAML::Node s = r.site(lstm ? "moe0" : "decoder.l1.ffn");
    CHECK(s["group"].as<std::string>() == "lm");
    CHECK(s["family"].as<std::string>() == "moe");
    CHECK(s["kind"].as<std::string>() == (lstm ? "moe" : "ffn"));
    CHECK(s["instances"].as<int>() == 17);  // every stream token once (4 + 1 + 1 + 7 + 1 + 2 + 1)
    CHECK(s["entropy"].as<double>() == Approx(std::log(2.0)).epsilon(1e-6));
    CHECK(doubles(s["argmax_share"]) == std::vector<double>{1, 0, 0, 0});
    CHECK(doubles(s["routed_share"]) == std::vector<double>{0.5, 0.5, 0, 0});
    CHECK(s["k"].as<int>() == 2);
    CHECK(s["routed_pairs"].as<int>() == 34);
    CHECK(doubles(s["importance_share"])[1] == Approx(0.5));
    CHECK(s["routed_max_over_mean"].as<double>() == Approx(2.0));
    CHECK(s["routed_cv"].as<double>() == Approx(1.0));
    CHECK(r.summary()["lm_tokens"].as<int>() == 17);
    // Routed attribution: every token goes to experts 0 and 1 alike, so every PMI is ln 1 = 0. The
    // inputs read are </s> (4 times) and 13 other tokens once: 2 routed events each.
    const Run routed = run({"-m", ckpt, "-i", (dir / "text.txt").string(), "--context", "6", "--attribution", "routed",
                            "--min-count", "3", "--format", "json"});
    REQUIRE(routed.rc == 0);
    const YAML::Node rs = routed.site(lstm ? "moe0" : "decoder.l1.ffn");
    CHECK(rs["pmi_events"].as<int>() == 34);
    REQUIRE(rs["top_tokens"][1].size() == 1);  // </s>, the only token with 3 events or more
    CHECK(rs["top_tokens"][1][0]["token"].as<std::string>() == "</s>");
    CHECK(rs["top_tokens"][1][0]["pmi"].as<double>() == Approx(0.0).margin(1e-12));
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("moe-score experts: MoA routers", "[translator][experts]") {
  auto m = build(mt(2, 1, "{type: moa, k: 2, experts: 4, head_dim: 4}"));
  const auto dir = test::temp_dir("experts-moa");
  std::vector<std::string> args = pair_files(dir, "w0 w2 w4\nw6 w8\nw1\n", "w5 w7\nw9\nw0 w3 w3 w3\n");
  args.insert(args.end(), {"--format", "json"});
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), args.begin(), args.end());
    return a;
  };
  const Run zero = run(with({"-m", test::save_tiny(m, dir)}));
  REQUIRE(zero.rc == 0);
  REQUIRE(zero.json.size() == 4);
  for (const char* site : {"encoder.l0.self_attn", "decoder.l0.self_attn", "decoder.l0.cross_attn"}) {
    INFO(site);
    const YAML::Node s = zero.site(site);
    CHECK(s["family"].as<std::string>() == "moa");
    CHECK(s["instances"].as<int>() == (std::string(site).starts_with("encoder") ? 9 : 10));
    CHECK(s["entropy"].as<double>() == Approx(std::log(4.0)).epsilon(1e-6));
    CHECK(doubles(s["argmax_share"]) == std::vector<double>{1, 0, 0, 0});
    CHECK(doubles(s["routed_share"]) == std::vector<double>{0.5, 0.5, 0, 0});
    CHECK(s["importance_cv"].as<double>() == Approx(0.0).margin(1e-6));
  }
  // A random router: shares are distributions, entropies below ln 4, two routed slots per token.
  for (const char* w : {"encoder.l0.self_attn.router.w", "decoder.l0.cross_attn.router.w"}) {
    std::vector<std::pair<int64_t, float>> v;
    for (int64_t i = 0; i < 64; ++i) v.push_back({i, float((i * 37) % 11) - 5.f});
    set(*m.params, w, v);
  }
  const Run rnd = run(with({"-m", test::save_tiny(m, dir), "--unit", "word"}));
  REQUIRE(rnd.rc == 0);
  for (const char* site : {"encoder.l0.self_attn", "decoder.l0.cross_attn"}) {
    const YAML::Node s = rnd.site(site);
    double sa = 0, sr = 0, si = 0;
    for (double v : doubles(s["argmax_share"])) sa += v;
    for (double v : doubles(s["routed_share"])) sr += v;
    for (double v : doubles(s["importance_share"])) si += v;
    CHECK(sa == Approx(1.0));
    CHECK(sr == Approx(1.0));
    CHECK(si == Approx(1.0).epsilon(1e-5));
    CHECK(s["entropy"].as<double>() < std::log(4.0) - 1e-3);
    CHECK(s["routed_pairs"].as<int>() == 2 * s["instances"].as<int>());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-score experts: --help and a model without gated sites", "[translator][experts][errors]") {
  const cli::SubcommandTable table = score_table();
  std::ostringstream help, err;
  CHECK(table.run({"moe-score", "experts", "--help"}, help, err) == 0);
  CHECK(help.str().find("--min-count") != std::string::npos);
  CHECK(help.str().find("--attribution") != std::string::npos);
  auto m = test::tiny_model(9);
  const auto dir = test::temp_dir("experts-none");
  const std::string ckpt = test::save_tiny(m, dir);
  test::write_file(dir / "src.txt", "w1 w2\n");
  const Run r = run({"-m", ckpt, "--src", (dir / "src.txt").string(), "--tgt", (dir / "src.txt").string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("moe-score experts: error:") != std::string::npos);
  CHECK(r.err.find(ckpt) != std::string::npos);
  CHECK(r.err.find("transformer model with attention mha, ffn dense") != std::string::npos);
  CHECK(r.err.find("no gated site") != std::string::npos);
  const Run translated = run({"-m", ckpt, "-i", (dir / "src.txt").string()});  // translated first, same error
  CHECK(translated.rc == 1);
  CHECK(translated.err.find("no gated site") != std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {
/// A SentencePiece-like vocabulary: ids 0-3 the specials, then the pieces given.
class PieceVocab : public data::Vocab {
 public:
  explicit PieceVocab(std::vector<std::string> pieces) : p_(std::move(pieces)) {}
  std::vector<int32_t> encode(std::string_view) const override { return {}; }
  std::string decode(const std::vector<int32_t>&) const override { return ""; }
  int32_t size() const override { return static_cast<int32_t>(p_.size()) + 4; }
  std::string piece(int32_t id) const override {
    static const char* specials[] = {"<pad>", "<unk>", "<s>", "</s>"};
    return id < 4 ? specials[id] : p_[static_cast<size_t>(id - 4)];
  }

 private:
  std::vector<std::string> p_;
};
}  // namespace

TEST_CASE("moe-score experts: PMI units are pieces or words", "[translator][experts]") {
  const std::string m = "\xE2\x96\x81";  // SentencePiece's word-boundary mark
  const PieceVocab sp({m + "the", m + "cat", "s", m + "sat", "ting"});
  // Row 0: <s> _the _cat s _sat ting </s> <pad>; row 1: _cat s ting with the s masked out.
  const std::vector<int32_t> ids = {2, 4, 5, 6, 7, 8, 3, 0, 5, 6, 8, 0, 0, 0, 0, 0};
  const std::vector<double> mask = {1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0};
  auto texts = [](const std::vector<TokenUnit>& row) {
    std::vector<std::string> t;
    for (const auto& u : row) t.push_back(u.text);
    return t;
  };
  const auto pieces = token_units(ids, mask, 2, 8, sp, false);
  CHECK(texts(pieces[0]) == std::vector<std::string>{"<s>", m + "the", m + "cat", "s", m + "sat", "ting", "</s>"});
  CHECK(pieces[0][3].positions == std::vector<int64_t>{3});
  const auto words = token_units(ids, mask, 2, 8, sp, true);
  CHECK(texts(words[0]) == std::vector<std::string>{"<s>", "the", "cats", "satting", "</s>"});
  CHECK(words[0][2].positions == std::vector<int64_t>{2, 3});
  // A masked-out position breaks a word: pieces are not joined across it.
  CHECK(texts(words[1]) == std::vector<std::string>{"cat", "ting"});
  // A word vocabulary's pieces are words.
  data::WordVocab wv(test::tiny_words());
  const auto w = token_units({4, 5, 3}, {1, 1, 1}, 1, 3, wv, true);
  CHECK(texts(w[0]) == std::vector<std::string>{"w0", "w1", "</s>"});
}
