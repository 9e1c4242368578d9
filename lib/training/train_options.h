// The options of moe-train: every key of the recipe's data.*, train.*, valid.*, dist.* sections and
// run_dir, declared once in a key table (train_keys(): name, member, default, help, check), from which
// the Schema (defaults, --help, --dump-config, suggestions) and TrainOptions::from_config follow; the
// model.* keys come from the model registry (models/model_registry.h), one table per model type.
// Checks across keys (and the language-model keys' rules, lm_options.cpp) name the keys they concern. model.type picks
// the task: transformer = translation (data.train.src/tgt, data.vocab.src/tgt), transformer_lm / lstm_lm = language
// model and transformer_mlm = masked LM (data.train.text, data.vocab.path); the other task's keys are errors. The model
// section stays a YAML map handed to create_model(), so lib/models' from_yaml remains the source of truth for it: a
// translation model gets every Transformer key, a language model only the keys the recipe sets (its own defaults apply
// to the rest). Covered by tests/training/train_options_test.cpp and tests/training/lm_options_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/keys.h"
#include "data/mlm.h"
#include "data/subword_sampling.h"
#include "data/target_weights.h"
#include "models/decoding_options.h"
#include "models/model_registry.h"
#include "tensor/dtype.h"
#include "training/dist_options.h"
#include "training/guided_alignment.h"
#include "training/optimizer.h"
#include "training/schedule.h"
#include "training/stop_request.h"

namespace moe {

/// The task a model trains on is its kind (model_registry.h).
using TrainTaskKind = ModelKind;

/// The task of a model type (its registered kind; an unknown type -> translation, create_model names it).
TrainTaskKind task_of_model_type(const std::string& type);
const char* task_name(TrainTaskKind task);

/// MAE's block coordinate descent (training/mae_schedule.cpp): G passes in epochs e (from 1) with
/// e mod g_every == g_offset.
struct BcdSchedule {
  int64_t g_every = 5;
  int64_t g_offset = 0;
};

/// The kind of vocabulary moe-train builds when it is missing: SentencePiece (bpe, unigram) or a word list.
MOE_NAMED_ENUM(VocabType, bpe, unigram, word)
/// Which saves also write a numbered checkpoint: every save (save_every) or the end of every epoch.
MOE_NAMED_ENUM(NumberedCheckpoints, updates, epochs)
/// The papers' BLEU that scripts/evaluate.sh reports beside sacreBLEU: none, tokenized (BLEU of the
/// tokenized text as it is: IWSLT14) or compound_split (13a tokens, hyphens split as ##AT##: WMT14 En-De).
MOE_NAMED_ENUM(PaperBleu, none, tokenized, compound_split)
/// What early stopping and checkpoint.best follow.
MOE_NAMED_ENUM(ValidMetric, loss, ppl, bleu)

struct DataOptions {
  std::string train_src, train_tgt, valid_src, valid_tgt;
  std::string train_alignment;  // word alignments of the training pairs: guided alignment (training/guided_alignment.h)
  std::string train_weights;    // weights of the training pairs' targets: data weighting (data/target_weights.h)
  data::WeightingType weighting = data::WeightingType::sentence;
  data::SubwordSampling subword;     // training segmentations sampled anew every epoch (data/subword_sampling.h)
  std::string src_vocab, tgt_vocab;  // the same path twice = a joint vocabulary
  // Building a missing vocabulary (SentencePiece for .spm/.model paths, else a word list).
  int vocab_size = 8000;
  VocabType vocab_type = VocabType::bpe;
  std::string vocab_normalization = "nmt_nfkc";
  double vocab_character_coverage = 1.0;
  int64_t vocab_sentences = 10'000'000;
  int64_t max_len = 256;  // training filter per side, in tokens (0 = no limit)
  double max_ratio = 0;   // 0 = no ratio filter
  std::string cache_dir;  // token caches ("" = beside the texts)
  bool skip_invalid_utf8 = false;
  // Language models: one text per set (a token stream with </s> after every line).
  std::string train_text, valid_text;
  std::string vocab_path;       // .spm / .model = SentencePiece, else a word list
  int64_t vocab_min_count = 1;  // word lists built here: rarer words become <unk>
  int64_t vocab_max_words = 0;  // word lists built here: keep the N most frequent (0 = all)
  int64_t tokens_per_sample = 512;
  data::MlmOptions mlm;  // masked LM: mask_prob, replace_mask, replace_random, mask_id (-1 = auto)
};

struct ValidOptions {
  ValidMetric metric = ValidMetric::loss;
  /// valid.max_tokens (every validation batch) and BLEU validation's search: valid.beam, valid.lenpen,
  /// valid.length_penalty, valid.max_len_a, valid.max_len_b, valid.min_len; moe-translate's defaults.
  /// The device and dtype are the training's (train.device, train.dtype); n_best is 1.
  DecodingOptions decoding;
  int64_t bleu_lines = 0;  // 0 = the whole valid set
  bool bleu = false;       // decode for BLEU at every validation (always when metric == bleu)
  int64_t context = 0;     // LM windows: tokens per window (0 = data.tokens_per_sample)
  int64_t stride = 0;      // LM windows: targets scored per later window (0 = context / 2)
};

/// How scripts/evaluate.sh evaluates a finished run as the recipe's paper did (eval.* keys). moe-train
/// itself reads none of them: declaring them checks the keys and their values when the recipe loads, and
/// keeps them in the run's config.yml, where evaluate.sh reads them.
struct EvalOptions {
  int64_t average_last = 0;  // average the last N numbered checkpoints (0: checkpoint.best alone)
  DecodingOptions decoding;  // eval.beam and eval.lenpen: moe-translate's --beam and --lenpen
  PaperBleu paper_bleu = PaperBleu::none;
};

struct TrainOptions {
  TrainTaskKind task = TrainTaskKind::translation;  // from model.type
  DataOptions data;
  ValidOptions valid;
  EvalOptions eval;
  YAML::Node model;  // the model section (vocabulary sizes and special ids are filled in by the trainer)
  int64_t max_tokens = 4096, max_sentences = 0, update_freq = 1;
  int64_t max_updates = 0, max_epochs = 0;  // 0 = no limit (one of them or max_minutes must be set)
  double max_minutes = 0;                   // wall-clock limit of this process's training loop (0 = none)
  std::string init_from;                    // checkpoint whose parameters start the run (fine-tuning)
  std::vector<std::string> trainable;       // groups / name regexes to train (empty = all)
  uint64_t seed = 1;
  std::string device = "auto";
  DType dtype = DType::f32;  // compute dtype: f32, bf16 (f32 masters) or f16 (+ dynamic loss scaling)
  bool dtype_auto = false;   // train.dtype auto: the Trainer picks bf16 on a GPU, f32 on the CPU, and logs it
  float label_smoothing = 0.1f;
  GuidedAlignmentOptions guided_alignment;  // with data.train.alignment
  double clip_norm = 0;
  Optimizer::Kind optimizer = Optimizer::Kind::adam;
  OptimizerOptions optim;
  ScheduleOptions schedule;
  int64_t log_every = 100, valid_every = 1000, save_every = 1000, keep_last = 0, early_stopping = 0;
  NumberedCheckpoints numbered_checkpoints = NumberedCheckpoints::updates;
  bool skip_nan_batches = false;
  double ema_decay = 0;              // > 0: smoothed parameters (training/parameter_ema.h)
  BcdSchedule bcd;                   // MAE: which epochs run gate (G) updates
  double gate_lr = 1.0;              // MAE: plain SGD learning rate of the gates
  double loss_scale = 32768;         // f16 only: initial dynamic loss scale
  int64_t loss_scale_window = 2000;  // f16 only: clean updates before the scale doubles
  std::string run_dir = "run";
  OnSignal on_signal = OnSignal::save_and_exit;  // SIGTERM / SIGINT / SIGUSR1 (stop_request.h)
  DistOptions dist;  // dist.*: multi-process training (lib/dist)

  /// Reads and checks every key; errors name the key and the offending value.
  static TrainOptions from_config(const config::Config& config);
};

/// Every key of moe-train but model.*: data.*, train.*, valid.*, dist.* and run_dir.
const config::Keys<TrainOptions>& train_keys();
/// Declares train_keys() and every registered model type's model.* keys in `schema`.
void register_train_keys(config::Schema& schema);
/// Reads the language-model data keys into `o` and checks that no translation key is set
/// (o.task is a language model) or that no language-model key is set (translation).
void read_lm_options(const config::Config& config, TrainOptions& o);
/// The model section for create_model(): the keys the model type knows that the recipe sets (the
/// schema's default of a key several types share is the first type's; each type fills in its own). A
/// key of another model type is passed on (and rejected by the model's from_yaml, naming it) only
/// when set to a non-default value, so a dumped configuration, which lists every key, loads back.
YAML::Node model_section(const config::Config& config);
/// Sets every model key that `config` leaves at its default to the value model.type's own defaults
/// give it (e.g. pre_norm true for a transformer_lm), so that a dumped configuration shows the model
/// that trains and loads back to it (moe-train calls it before --dump-config).
void settle_model_keys(config::Config& config);
/// The model keys a model type understands (without "model."), for building its model section.
const std::vector<std::string>& model_keys_of(const std::string& type);

}  // namespace moe
