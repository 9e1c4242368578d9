// A tiny randomly initialised Transformer (2+2 layers, d = 16; or an lstm_seq2seq), or a causal Transformer LM,
// over a 24-word vocabulary for the translator, generation and scoring tests, and a checkpoint of it (word
// vocabularies embedded) in a temp folder.
#pragma once
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "data/batch.h"
#include "data/vocab.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "models/model_registry.h"
#include "models/transformer_lm.h"
#include "support/temp_dirs.h"
#include "translator/pair_scores.h"

namespace moe::test {

struct TinyModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<ParameterStore> params;
  std::unique_ptr<data::WordVocab> vocab;
  const EncoderDecoder& net() const { return *model->encoder_decoder(); }
};

inline std::vector<std::string> tiny_words() {
  std::vector<std::string> w;
  for (int i = 0; i < 20; ++i) w.push_back("w" + std::to_string(i));
  return w;
}

/// A model of configuration `cfg` (model.* keys; src_vocab / tgt_vocab are set to the 24 words) with random
/// parameters drawn from `seed`, all declared (one inference pass of the training loss).
inline TinyModel model_of(YAML::Node cfg, uint64_t seed) {
  TinyModel m;
  m.vocab = std::make_unique<data::WordVocab>(tiny_words());
  cfg["src_vocab"] = m.vocab->size();
  cfg["tgt_vocab"] = m.vocab->size();
  m.model = create_model(cfg);
  m.params = std::make_unique<ParameterStore>(Device::cpu(), seed);
  const std::vector<int32_t> x = {4, 5, 6}, y = {7, 8};
  data::Batch b = data::make_batch({std::span<const int32_t>(x)}, {std::span<const int32_t>(y)}, {0}, 0, 2, 3);
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  Builder builder(g);
  m.model->loss(builder, b, 0.f);
  return m;
}

/// max_positions 32 unless given; `seed` changes the random parameters; `eos_scale` multiplies the
/// </s> row of the (tied) target embedding, which makes </s> decisions sharper (varied lengths).
/// `attention`: a model.attention YAML map (e.g. "{type: mae, name: MAE-1}"), empty for plain MHA.
/// `type` lstm_seq2seq: an LSTM encoder-decoder of the same widths with batchwise-gated MoE layers
/// (4 experts), the output matrix tied to the target embedding; `attention` is not read.
inline TinyModel tiny_model(uint64_t seed = 5, int64_t max_positions = 32, float eos_scale = 1.f,
                            const std::string& attention = "", const std::string& type = "transformer") {
  YAML::Node cfg;
  cfg["type"] = type;
  cfg["d_model"] = 16;
  cfg["enc_layers"] = 2;
  cfg["dec_layers"] = 2;
  cfg["dropout"] = 0.0;
  cfg["max_positions"] = max_positions;
  if (type == "lstm_seq2seq") {
    cfg["hidden"] = 16;
    cfg["tie_embeddings"] = "decoder";
    cfg["moe"] = YAML::Load("{type: moe, experts: 4, k: 2, hidden: 16, gating: batchwise}");
  } else {
    cfg["ffn_dim"] = 32;
    cfg["heads"] = 2;
  }
  if (!attention.empty()) cfg["attention"] = YAML::Load(attention);
  TinyModel m = model_of(cfg, seed);
  Tensor e = m.params->value("embed.tgt");
  auto v = e.to_vector<float>();
  for (int64_t d = 0; d < 16; ++d) v[3 * 16 + d] *= eos_scale;
  e.copy_from(Tensor::from_vector(v, e.shape()));
  return m;
}

/// Every translation family at d 64, 2+2 layers, by name (model.* keys): the Transformer, MAE-7, MoA, MoE FFN,
/// Switch with shared experts and the LSTM with MoE layers, for the tests that run each family alike.
inline std::vector<std::pair<std::string, YAML::Node>> family_configs() {
  const std::vector<std::pair<std::string, std::string>> families = {
      {"transformer", "{}"},
      {"MAE-7", "{attention: {type: mae, name: MAE-7}}"},
      {"MoA", "{attention: {type: moa, k: 2, experts: 4, head_dim: 16}}"},
      {"MoE FFN", "{ffn: {type: moe, experts: 4, k: 2, hidden: 256}}"},
      {"Switch + shared", "{ffn: {type: moe, gating: switch, experts: 8, k: 2, hidden: 128, shared: 1}}"},
      {"LSTM-MoE",
       "{type: lstm_seq2seq, hidden: 64, tie_embeddings: decoder, "
       "moe: {type: moe, experts: 4, k: 2, hidden: 256, gating: batchwise}}"},
  };
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (const auto& [name, yaml] : families) {
    YAML::Node cfg = YAML::Load(yaml);
    if (!cfg["type"]) {
      cfg["type"] = "transformer";
      cfg["ffn_dim"] = 512;
      cfg["heads"] = 8;
    }
    cfg["d_model"] = 64;
    cfg["enc_layers"] = 2;
    cfg["dec_layers"] = 2;
    cfg["dropout"] = 0.0;
    cfg["max_positions"] = 32;
    out.emplace_back(name, cfg);
  }
  return out;
}

/// A fresh temp folder for one test.
inline std::filesystem::path temp_dir(const std::string& name) {
  return fresh_temp_dir("moe-translator-test-" + name + "-" + std::to_string(::getpid()));
}

/// A language model of configuration `cfg` (a YAML map of model.* keys; vocab is set to the 24 words) with random
/// parameters drawn from `seed`, all declared (one decoding step). `net()` does not apply.
inline TinyModel lm_of(const std::string& cfg, uint64_t seed) {
  TinyModel m;
  m.vocab = std::make_unique<data::WordVocab>(tiny_words());
  YAML::Node c = YAML::Load(cfg);
  c["vocab"] = m.vocab->size();
  m.model = create_model(c);
  m.params = std::make_unique<ParameterStore>(Device::cpu(), seed);
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  Builder builder(g);
  const auto state = m.model->decoder()->start(builder, Tensor(), Tensor());
  m.model->decoder()->step(builder, *state, Tensor::from_vector(std::vector<int32_t>{2}, Shape{1}));
  return m;
}

/// A causal Transformer LM (2 layers, d 16, max_positions 24) over the same 24 words, random parameters drawn from
/// `seed`.
inline TinyModel tiny_lm(uint64_t seed = 11) {
  return lm_of("{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 2, dropout: 0.0, max_positions: 24}",
               seed);
}

/// A causal Transformer LM with an adaptive softmax (cutoffs 8, 16: no output matrix a shortlist could restrict), 1
/// layer, d 16, max_positions 24, over the same 24 words, random parameters drawn from `seed`.
inline TinyModel tiny_adaptive_lm(uint64_t seed) {
  return lm_of(
      "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, max_positions: 24, "
      "tie_embeddings: false, adaptive_softmax_cutoffs: [8, 16]}",
      seed);
}

/// log p(next | </s> + seq[0..t)) of `m` (a transformer_lm) for every t <= |seq|, recomputed over the whole sequence:
/// [|seq| + 1][V] (a decoding begins after </s>, as the model was trained: models/decoder.h lm_step_tokens).
inline std::vector<std::vector<double>> lm_log_prob_rows(const TinyModel& m, const std::vector<int32_t>& seq) {
  std::vector<int32_t> in = {3};
  in.insert(in.end(), seq.begin(), seq.end());
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  Builder b(g);
  const auto T = static_cast<int64_t>(in.size());
  const auto lp = dynamic_cast<const TransformerLm&>(*m.model)
                      .log_probs(b, Tensor::from_vector(in, Shape{1, T}))
                      .val()
                      .to_vector<double>();
  const int64_t V = m.vocab->size();
  std::vector<std::vector<double>> rows;
  for (int64_t t = 0; t < T; ++t) rows.emplace_back(lp.begin() + t * V, lp.begin() + (t + 1) * V);
  return rows;
}

/// Saves `m` with its word vocabulary under each of `roles` (a translation model: src and tgt; an LM: lm).
/// `words`: the vocabulary's words (default tiny_words(); another order makes another vocabulary of the same size).
inline std::string save_tiny(const TinyModel& m, const std::filesystem::path& dir,
                             const std::vector<std::string>& roles = {"src", "tgt"},
                             const std::vector<std::string>& words = tiny_words()) {
  const auto vocab_path = dir / "words.vocab";
  std::ofstream v(vocab_path);
  for (const auto& w : words) v << w << "\n";
  v.close();
  const std::string path = (dir / "tiny.safetensors").string();
  std::vector<VocabFile> vocabs;
  for (const std::string& role : roles) vocabs.push_back(VocabFile::read(role, vocab_path.string()));
  save_checkpoint(path, *m.model, *m.params, vocabs);
  return path;
}

/// tiny_words() with words i and j swapped.
inline std::vector<std::string> swapped_words(size_t i, size_t j) {
  auto w = tiny_words();
  std::swap(w[i], w[j]);
  return w;
}

/// Checks moe-score pairs' "log_prob<TAB>tokens" lines `printed` against `want`: as many, log-probs equal to 1e-5 (a
/// last bit's difference can flip the printed sixth decimal between graphs and machines), the same token counts.
inline void check_printed_scores(const std::string& printed, const std::vector<PairScore>& want) {
  std::istringstream lines(printed);
  for (const PairScore& s : want) {
    double log_prob = 0;
    int64_t tokens = 0;
    REQUIRE(lines >> log_prob >> tokens);
    CHECK(log_prob == Approx(s.log_prob).margin(1e-5));
    CHECK(tokens == s.tokens);
  }
  std::string extra_line;
  CHECK_FALSE(std::getline(lines >> std::ws, extra_line));
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream buf;
  buf << f.rdbuf();
  return buf.str();
}

/// The lines of `text` (a last line without a newline counts).
inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

}  // namespace moe::test
