// Helpers for the training tests: a fresh temporary folder, a small synthetic parallel corpus
// (target = source words reversed, from a 20-word vocabulary) and the options of a tiny Transformer.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "training/train_options.h"

namespace moe::test {

inline std::string temp_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("moe-train-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
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
  o.schedule = ScheduleOptions{"inverse_sqrt", 3e-3, 0, 4, 12};
  o.log_every = 1;
  o.valid_every = 4;
  o.save_every = 6;
  return o;
}

}  // namespace moe::test
