// The options of moe-train: every key of the recipe's data.*, model.*, train.*, valid.* sections and
// run_dir, registered in a config Schema with defaults and help (register_train_keys), and read back
// into plain structs (TrainOptions::from_config) with range checks whose errors name the key.
// The model section stays a YAML map handed to create_model(), so lib/models' from_yaml remains the
// source of truth for it. Covered by tests/training/train_options_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "config/config.h"
#include "tensor/dtype.h"
#include "training/optimizer.h"
#include "training/schedule.h"

namespace moe {

struct DataOptions {
  std::string train_src, train_tgt, valid_src, valid_tgt;
  std::string src_vocab, tgt_vocab;  // the same path twice = a joint vocabulary
  // Building a missing vocabulary (SentencePiece for .spm/.model paths, else a word list).
  int vocab_size = 8000;
  std::string vocab_type = "bpe";  // bpe | unigram
  std::string vocab_normalization = "nmt_nfkc";
  double vocab_character_coverage = 1.0;
  int64_t vocab_sentences = 10'000'000;
  int64_t max_len = 256;  // training filter per side, in tokens (0 = no limit)
  double max_ratio = 0;   // 0 = no ratio filter
  std::string cache_dir;  // token caches ("" = beside the texts)
  bool skip_invalid_utf8 = false;
};

struct ValidOptions {
  std::string metric = "loss";  // loss | ppl | bleu (early stopping and the best checkpoint)
  int64_t max_tokens = 4096;
  int beam = 4;
  double lenpen = 1.0, max_len_a = 1.2;
  int64_t max_len_b = 10;
  int64_t bleu_lines = 0;  // 0 = the whole valid set
  bool bleu = false;       // decode for BLEU at every validation (always when metric == bleu)
};

struct TrainOptions {
  DataOptions data;
  ValidOptions valid;
  YAML::Node model;  // the model section (vocabulary sizes and special ids are filled in by the trainer)
  int64_t max_tokens = 4096, max_sentences = 0, update_freq = 1;
  int64_t max_updates = 0, max_epochs = 0;  // 0 = no limit (one of them must be set)
  uint64_t seed = 1;
  std::string device = "auto";
  DType dtype = DType::f32;  // compute dtype: f32, bf16 (f32 masters) or f16 (+ dynamic loss scaling)
  float label_smoothing = 0.1f;
  double clip_norm = 0;
  std::string optimizer = "adam";
  OptimizerOptions optim;
  ScheduleOptions schedule;
  int64_t log_every = 100, valid_every = 1000, save_every = 1000, keep_last = 0, early_stopping = 0;
  bool skip_nan_batches = false;
  double loss_scale = 32768;         // f16 only: initial dynamic loss scale
  int64_t loss_scale_window = 2000;  // f16 only: clean updates before the scale doubles
  std::string run_dir = "run";

  /// Reads and checks every key; errors name the key and the offending value.
  static TrainOptions from_config(const config::Config& config);
};

/// Registers data.*, model.*, train.*, valid.* and run_dir in `schema`.
void register_train_keys(config::Schema& schema);

}  // namespace moe
