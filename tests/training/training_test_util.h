// Helpers for the training tests: a fresh temporary folder, a small synthetic parallel corpus
// (target = source words reversed, from a 20-word vocabulary) and the options of a tiny Transformer;
// a synthetic LM text (a first-order Markov chain over 24 words: each word has 3 likely successors)
// and the options of a tiny Transformer LM on it.
#pragma once
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dirs.h"
#include "training/trainer.h"

namespace moe::test {

/// One line of run_dir/metrics.jsonl.
struct MetricsLine {
  std::string type;
  int64_t update;
  double loss;
};

inline std::vector<MetricsLine> read_metrics(const std::string& run_dir) {
  std::vector<MetricsLine> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string s; std::getline(in, s);) {
    const YAML::Node n = YAML::Load(s);
    out.push_back({n["type"].as<std::string>(), n["update"].as<int64_t>(), n["loss"].as<double>()});
  }
  return out;
}

inline std::string temp_dir(const std::string& name) {
  return test::fresh_temp_dir("moe-train-test-" + name + "-" + std::to_string(::getpid())).string();
}

/// Two runs' metrics line by line: same types, updates and bit-identical losses (Catch2 checks).
inline void check_same_metrics(const std::vector<MetricsLine>& a, const std::vector<MetricsLine>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("line " << i << " update " << a[i].update << " " << a[i].type);
    CHECK(a[i].type == b[i].type);
    CHECK(a[i].update == b[i].update);
    CHECK(a[i].loss == b[i].loss);  // bit-identical
  }
}

/// Trains `full` in dir/full, and the same run in dir/part interrupted after `stop` updates and
/// resumed to full.max_updates; both must log the same metrics.
inline void check_resume_reproduces(TrainOptions full, const std::string& dir, int64_t stop) {
  full.run_dir = dir + "/full";
  Trainer(full).run(false);
  TrainOptions part = full;
  part.run_dir = dir + "/part";
  part.max_updates = stop;                       // stops (and saves) at update `stop`
  part.schedule.max_updates = full.max_updates;  // the learning-rate schedule of the whole run
  Trainer(part).run(false);
  CHECK(read_metrics(part.run_dir).back().update == stop);
  part.max_updates = full.max_updates;
  Trainer(part).run(true);
  check_same_metrics(read_metrics(full.run_dir), read_metrics(part.run_dir));
}

/// Writes `lines` pairs to dir/name.src and dir/name.tgt: 2-8 words w0..w19; the target reverses them.
inline void write_corpus(const std::string& dir, const std::string& name, int lines, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(2, 8), word(0, 19);
  std::ofstream src(dir + "/" + name + ".src"), tgt(dir + "/" + name + ".tgt");
  for (int i = 0; i < lines; ++i) {
    std::vector<std::string> w(static_cast<size_t>(len(rng)));
    for (auto& x : w) x = "w" + std::to_string(word(rng));
    for (size_t k = 0; k < w.size(); ++k) src << (k ? " " : "") << w[k];
    for (size_t k = w.size(); k-- > 0;) tgt << w[k] << (k ? " " : "");
    src << '\n';
    tgt << '\n';
  }
}

/// The train and valid corpora of a test: dir/train.{src,tgt} from `seed`, dir/valid.{src,tgt} from seed + 1.
inline void write_corpora(const std::string& dir, int train_lines, int valid_lines, uint32_t seed) {
  write_corpus(dir, "train", train_lines, seed);
  write_corpus(dir, "valid", valid_lines, seed + 1);
}

/// A tiny pre-norm Transformer on the corpus of write_corpus(dir, "train"/"valid"), joint word vocabulary.
inline TrainOptions tiny_options(const std::string& dir) {
  TrainOptions o;
  o.run_dir = dir + "/run";
  o.data.train_src = dir + "/train.src";
  o.data.train_tgt = dir + "/train.tgt";
  o.data.valid_src = dir + "/valid.src";
  o.data.valid_tgt = dir + "/valid.tgt";
  o.data.src_vocab = o.data.tgt_vocab = dir + "/vocab.txt";
  o.model = YAML::Load(
      "{type: transformer, d_model: 16, ffn_dim: 32, heads: 2, enc_layers: 1, dec_layers: 1, "
      "pre_norm: true, dropout: 0.1, max_positions: 64}");
  o.max_tokens = 200;
  o.max_updates = 12;
  o.device = "cpu";
  o.schedule = ScheduleOptions{LrScheduleKind::inverse_sqrt, 3e-3, 0, 4, 12};
  o.log_every = 1;
  o.valid_every = 4;
  o.save_every = 6;
  return o;
}

/// Writes `lines` lines of 3-12 words w0..w23 to dir/name.txt: after w_i comes w_{(i*7+k)%24}, k in
/// {1,2,3} (probabilities 0.6, 0.3, 0.1), so a model that learns the bigrams beats the unigram entropy.
inline void write_lm_text(const std::string& dir, const std::string& name, int lines, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(3, 12), first(0, 23);
  std::discrete_distribution<int> step({0.6, 0.3, 0.1});
  std::ofstream out(dir + "/" + name + ".txt");
  for (int i = 0; i < lines; ++i) {
    int w = first(rng);
    const int n = len(rng);
    for (int k = 0; k < n; ++k) {
      out << (k ? " " : "") << "w" << w;
      w = (w * 7 + 1 + step(rng)) % 24;
    }
    out << '\n';
  }
}

/// The train and valid texts of an LM test: dir/train.txt from `seed`, dir/valid.txt from seed + 1.
inline void write_lm_texts(const std::string& dir, int train_lines, int valid_lines, uint32_t seed) {
  write_lm_text(dir, "train", train_lines, seed);
  write_lm_text(dir, "valid", valid_lines, seed + 1);
}

/// A tiny pre-norm Transformer LM on write_lm_text(dir, "train"/"valid"), word vocabulary built by the trainer.
inline TrainOptions tiny_lm_options(const std::string& dir) {
  TrainOptions o;
  o.task = TrainTaskKind::language_model;
  o.run_dir = dir + "/run";
  o.data.train_text = dir + "/train.txt";
  o.data.valid_text = dir + "/valid.txt";
  o.data.vocab_path = dir + "/vocab.words";
  o.data.tokens_per_sample = 16;
  o.model = YAML::Load(
      "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.1, max_positions: 64}");
  o.label_smoothing = 0;
  o.max_tokens = 128;  // 8 blocks per batch
  o.max_updates = 12;
  o.device = "cpu";
  o.schedule = ScheduleOptions{LrScheduleKind::inverse_sqrt, 1e-2, 0, 4, 12};
  o.log_every = 1;
  o.valid_every = 4;
  o.save_every = 6;
  o.valid.context = 16;
  o.valid.stride = 8;
  return o;
}

}  // namespace moe::test
