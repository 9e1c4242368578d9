// train_options.h implementation: key registration (defaults and help), the model section and typed
// reading with checks (the language-model keys: lm_options.cpp).
// Covered by tests/training/train_options_test.cpp.
#include "training/train_options.h"

#include <algorithm>

#include "common/error.h"
#include "models/transformer_config.h"

namespace moe {

void register_train_keys(config::Schema& s) {
  s.add_string("run_dir", "run", "folder for checkpoints, metrics.jsonl and the dumped config");
  // data
  s.add_string("data.train.src", "", "training source text (plain or .gz, one sentence per line)");
  s.add_string("data.train.tgt", "", "training target text, line-aligned with data.train.src");
  s.add_string("data.valid.src", "", "validation source text (empty: no validation)");
  s.add_string("data.valid.tgt", "", "validation target text (the reference for BLEU)");
  s.add_string("data.vocab.src", "",
               "source vocabulary (.spm/.model = SentencePiece, else a word list); built "
               "from the training data when missing");
  s.add_string("data.vocab.tgt", "", "target vocabulary; the same path as data.vocab.src = one joint vocabulary");
  s.add_int("data.vocab.size", 8000,
            "size of a SentencePiece vocabulary built by moe-train; for a word list, when set: keep the N most "
            "frequent words");
  s.add_string("data.vocab.type", "bpe",
               "kind of a built vocabulary: bpe | unigram (SentencePiece; spm = bpe) | word (language models' word "
               "lists, for a data.vocab.path that is not .spm/.model)");
  s.add_string("data.vocab.normalization", "nmt_nfkc", "SentencePiece normalisation rule for a built vocabulary");
  s.add_float("data.vocab.character_coverage", 1.0, "SentencePiece character coverage for a built vocabulary");
  s.add_int("data.vocab.sentences", 10'000'000, "sentences sampled to build a vocabulary (0 = all)");
  s.add_int("data.max_len", 256, "drop training pairs with a side longer than this many tokens (0 = no limit)");
  s.add_float("data.max_ratio", 0.0, "drop training pairs whose length ratio exceeds this (0 = no limit)");
  s.add_string("data.cache_dir", "", "folder for token caches (empty: beside the texts)");
  s.add_bool("data.skip_invalid_utf8", false,
             "replace lines with invalid UTF-8 by empty lines (dropped) "
             "instead of failing");
  // model: the Transformer's keys with TransformerConfig's defaults (its from_yaml checks them).
  const TransformerConfig d;
  s.add_string("model.type", "transformer", "architecture (see lib/models/model_factory.cpp)");
  s.add_int("model.d_model", d.d_model, "model width");
  s.add_int("model.ffn_dim", d.ffn_dim, "feed-forward inner width");
  s.add_int("model.heads", d.heads, "attention heads");
  s.add_int("model.enc_layers", d.enc_layers, "encoder layers");
  s.add_int("model.dec_layers", d.dec_layers, "decoder layers");
  s.add_bool("model.pre_norm", d.pre_norm, "pre-norm residual blocks (false: post-norm)");
  s.add_string("model.tie_embeddings", d.tie_embeddings,
               "transformer: none | decoder | all (all needs a joint vocabulary); language models: true | false");
  s.add_bool("model.scale_embeddings", d.scale_embeddings, "multiply embeddings by sqrt(d_model)");
  s.add_float("model.dropout", d.dropout, "dropout on embeddings and residual branches");
  s.add_float("model.activation_dropout", d.activation_dropout, "dropout after the feed-forward activation");
  s.add_string("model.activation", d.activation, "feed-forward activation");
  s.add_int("model.max_positions", d.max_positions, "longest sequence (sinusoidal positions)");
  s.add_map("model.attention", "attention variant: {type: mha | mae | moa, ...its options}");
  s.add_map("model.ffn", "feed-forward variant: {type: dense | moe, ...its options}");
  // train
  s.add_int("train.max_tokens", 4096,
            "tokens per batch: translation per side, padding included; language models: "
            "max_tokens / data.tokens_per_sample blocks");
  s.add_int("train.max_sentences", 0, "sentences per batch (0 = no limit)");
  s.add_int("train.update_freq", 1, "batches accumulated into one update");
  s.add_int("train.max_updates", 0, "stop after this many updates (0 = no limit)");
  s.add_int("train.max_epochs", 0, "stop after this many epochs (0 = no limit)");
  s.add_float("train.max_minutes", 0.0, "stop after this many minutes of training in this process (0 = no limit)");
  s.add_string("train.init_from", "",
               "start from this checkpoint's parameters (same names and shapes; parameters it lacks keep "
               "their initialisation); --resume takes precedence");
  s.add_strings("train.trainable", {},
                "train only these parameters: parameter groups (e.g. gate) or regexes over full names "
                "(e.g. '.*attn\\.o\\..*'); empty = all (MAE fine-tuning: FTG [gate], FTG+ [gate, '.*_attn\\.o\\..*'])");
  s.add_int("train.seed", 1, "seed of initialisation, shuffling and dropout");
  s.add_string("train.device", "auto", "cpu | cuda | cuda:N | auto (a GPU when present)");
  s.add_string("train.dtype", "f32",
               "compute dtype: f32 | bf16 | f16 (f32 master weights; f16 adds loss scaling) | auto (bf16 on a GPU, "
               "f32 on the CPU)");
  s.add_float("train.label_smoothing", 0.1, "label smoothing of the training loss");
  s.add_float("train.clip_norm", 0.0, "clip the gradient norm to this (0 = off)");
  s.add_string("train.optimizer", "adam", "adam | adamw | sgd | nag");
  s.add_floats("train.betas", {0.9, 0.98}, "Adam betas");
  s.add_float("train.eps", 1e-8, "Adam epsilon");
  s.add_float("train.weight_decay", 0.0, "weight decay (decoupled for adamw, L2 otherwise)");
  s.add_float("train.momentum", 0.9, "momentum of sgd / nag");
  s.add_float("train.lr", 5e-4, "peak learning rate");
  s.add_string("train.schedule", "inverse_sqrt", "inverse_sqrt | cosine | fixed | linear (after a linear warm-up)");
  s.add_int("train.warmup_updates", 4000, "linear warm-up updates");
  s.add_float("train.min_lr", 0.0, "floor of the learning rate after the warm-up");
  s.add_int("train.log_every", 100, "log training figures every N updates");
  s.add_int("train.valid_every", 1000, "validate every N updates (0 = only at the end)");
  s.add_int("train.save_every", 1000, "save checkpoint.last (and a numbered one) every N updates");
  s.add_int("train.keep_last", 0, "keep the last N numbered checkpoints (0 = none)");
  s.add_int("train.early_stopping", 0, "stop after N validations without improvement (0 = off)");
  s.add_bool("train.skip_nan_batches", false, "skip batches with a NaN/Inf loss instead of stopping");
  s.add_int("train.bcd.g_every", 5,
            "MAE block coordinate descent: gate (G) updates in epochs e (counted from 1) with e mod g_every == "
            "g_offset; expert (F) updates always");
  s.add_int("train.bcd.g_offset", 0, "MAE: see train.bcd.g_every (0 with 5: G updates in epochs 5, 10, 15, ...)");
  s.add_float("train.gate_lr", 1.0, "MAE gates (parameter group gate): learning rate of their plain SGD (no momentum)");
  s.add_float("train.loss_scale", 32768.0, "f16: initial dynamic loss scale");
  s.add_int("train.loss_scale_window", 2000, "f16: clean updates before the loss scale doubles");
  // valid
  s.add_string("valid.metric", "loss", "loss | ppl | bleu: the metric of early stopping and checkpoint.best");
  s.add_int("valid.max_tokens", 4096, "tokens per validation batch");
  s.add_int("valid.beam", 4, "beam size of BLEU validation");
  s.add_float("valid.lenpen", 1.0, "length penalty of BLEU validation");
  s.add_float("valid.max_len_a", 1.2, "BLEU validation: at most a * source length + b output tokens");
  s.add_int("valid.max_len_b", 10, "BLEU validation: see valid.max_len_a");
  s.add_int("valid.bleu_lines", 0, "BLEU validation on the first N lines (0 = all)");
  s.add_bool("valid.bleu", false, "decode the valid set for BLEU at every validation (implied by valid.metric bleu)");
  register_lm_keys(s);
  register_dist_keys(s);
}

TrainTaskKind task_of_model_type(const std::string& type) {
  if (type == "transformer_lm" || type == "lstm_lm") return TrainTaskKind::language_model;
  if (type == "transformer_mlm") return TrainTaskKind::masked_lm;
  return TrainTaskKind::translation;
}

const char* task_name(TrainTaskKind task) {
  switch (task) {
    case TrainTaskKind::language_model:
      return "language model";
    case TrainTaskKind::masked_lm:
      return "masked language model";
    default:
      return "translation";
  }
}

namespace {
void check_positive(int64_t v, const char* key) { MOE_CHECK(v > 0, key, " must be > 0, got ", v); }
void check_non_negative(int64_t v, const char* key) { MOE_CHECK(v >= 0, key, " must be >= 0, got ", v); }

}  // namespace

YAML::Node model_section(const config::Config& c) {
  const std::string type = c.get_string("model.type");
  const bool lm = task_of_model_type(type) != TrainTaskKind::translation;
  const std::vector<std::string>& own = model_keys_of(type);
  YAML::Node m(YAML::NodeType::Map);
  for (const auto& [name, entry] : c.entries()) {
    if (name.rfind("model.", 0) != 0) continue;
    const std::string key = name.substr(6);
    const bool mine = key == "type" || std::find(own.begin(), own.end(), key) != own.end();
    const bool set = entry.source != "default";
    const bool at_default = YAML::Dump(entry.value) == YAML::Dump(c.schema().at(name).default_value);
    if (mine ? set || !lm || key == "type" : set && !at_default) m[key] = YAML::Clone(entry.value);
  }
  for (const char* k : {"attention", "ffn", "moe"})
    if (m[k] && m[k].IsMap() && m[k].size() == 0) m.remove(k);
  return m;
}

TrainOptions TrainOptions::from_config(const config::Config& c) {
  TrainOptions o;
  o.run_dir = c.get_string("run_dir");
  MOE_CHECK(!o.run_dir.empty(), "run_dir must not be empty");
  o.model = model_section(c);
  o.task = task_of_model_type(c.get_string("model.type"));
  DataOptions& d = o.data;
  d.train_src = c.get_string("data.train.src");
  d.train_tgt = c.get_string("data.train.tgt");
  d.valid_src = c.get_string("data.valid.src");
  d.valid_tgt = c.get_string("data.valid.tgt");
  d.src_vocab = c.get_string("data.vocab.src");
  d.tgt_vocab = c.get_string("data.vocab.tgt");
  d.vocab_size = static_cast<int>(c.get_int("data.vocab.size"));
  check_positive(d.vocab_size, "data.vocab.size");
  d.vocab_type = c.get_string("data.vocab.type");
  MOE_CHECK(d.vocab_type == "bpe" || d.vocab_type == "unigram" || d.vocab_type == "spm" || d.vocab_type == "word",
            "data.vocab.type: '", d.vocab_type, "' is not one of bpe, unigram, spm, word");
  if (d.vocab_type == "spm") d.vocab_type = "bpe";
  read_lm_options(c, o);  // the language-model keys, and which task's keys may be set
  o.dist = read_dist_options(c);
  if (o.task == TrainTaskKind::translation) {
    MOE_CHECK(!d.train_src.empty() && !d.train_tgt.empty(), "data.train.src and data.train.tgt are required");
    MOE_CHECK(d.valid_src.empty() == d.valid_tgt.empty(), "data.valid.src ('", d.valid_src, "') and data.valid.tgt ('",
              d.valid_tgt, "') must be given together");
    MOE_CHECK(!d.src_vocab.empty() && !d.tgt_vocab.empty(),
              "data.vocab.src and data.vocab.tgt are required (give the "
              "same path twice for a joint vocabulary; a missing file is built from the training data)");
    MOE_CHECK(d.vocab_type != "word",
              "data.vocab.type word is for language models; a translation vocabulary "
              "is a SentencePiece model (bpe | unigram) or a word list named by its path");
  }
  d.vocab_normalization = c.get_string("data.vocab.normalization");
  d.vocab_character_coverage = c.get_float("data.vocab.character_coverage");
  d.vocab_sentences = c.get_int("data.vocab.sentences");
  d.max_len = c.get_int("data.max_len");
  check_non_negative(d.max_len, "data.max_len");
  d.max_ratio = c.get_float("data.max_ratio");
  d.cache_dir = c.get_string("data.cache_dir");
  d.skip_invalid_utf8 = c.get_bool("data.skip_invalid_utf8");

  o.max_tokens = c.get_int("train.max_tokens");
  check_positive(o.max_tokens, "train.max_tokens");
  o.max_sentences = c.get_int("train.max_sentences");
  check_non_negative(o.max_sentences, "train.max_sentences");
  o.update_freq = c.get_int("train.update_freq");
  check_positive(o.update_freq, "train.update_freq");
  o.max_updates = c.get_int("train.max_updates");
  o.max_epochs = c.get_int("train.max_epochs");
  check_non_negative(o.max_updates, "train.max_updates");
  check_non_negative(o.max_epochs, "train.max_epochs");
  o.max_minutes = c.get_float("train.max_minutes");
  MOE_CHECK(o.max_minutes >= 0, "train.max_minutes must be >= 0, got ", o.max_minutes);
  MOE_CHECK(o.max_updates > 0 || o.max_epochs > 0 || o.max_minutes > 0,
            "set train.max_updates, train.max_epochs or train.max_minutes (all are 0)");
  o.init_from = c.get_string("train.init_from");
  o.trainable = c.get_strings("train.trainable");
  o.seed = static_cast<uint64_t>(c.get_int("train.seed"));
  o.device = c.get_string("train.device");
  const std::string dt = c.get_string("train.dtype");
  MOE_CHECK(dt == "f32" || dt == "bf16" || dt == "f16" || dt == "auto", "train.dtype: '", dt,
            "' is not one of f32, bf16, f16, auto");
  o.dtype_auto = dt == "auto";
  o.dtype = o.dtype_auto ? DType::f32 : dtype_from_name(dt);  // auto: resolved by the Trainer for its device
  o.label_smoothing = static_cast<float>(c.get_float("train.label_smoothing"));
  MOE_CHECK(o.label_smoothing >= 0 && o.label_smoothing < 1, "train.label_smoothing must be in [0, 1), got ",
            o.label_smoothing);
  o.clip_norm = c.get_float("train.clip_norm");
  MOE_CHECK(o.clip_norm >= 0, "train.clip_norm must be >= 0, got ", o.clip_norm);
  o.optimizer = c.get_string("train.optimizer");
  const auto betas = c.get_floats("train.betas");
  MOE_CHECK(betas.size() == 2, "train.betas needs two values, got ", betas.size());
  o.optim.beta1 = betas[0];
  o.optim.beta2 = betas[1];
  o.optim.eps = c.get_float("train.eps");
  o.optim.weight_decay = c.get_float("train.weight_decay");
  o.optim.momentum = c.get_float("train.momentum");
  o.schedule.kind = c.get_string("train.schedule");
  o.schedule.lr = c.get_float("train.lr");
  o.schedule.min_lr = c.get_float("train.min_lr");
  o.schedule.warmup_updates = c.get_int("train.warmup_updates");
  o.schedule.max_updates = o.max_updates;
  o.log_every = c.get_int("train.log_every");
  check_positive(o.log_every, "train.log_every");
  o.valid_every = c.get_int("train.valid_every");
  o.save_every = c.get_int("train.save_every");
  o.keep_last = c.get_int("train.keep_last");
  o.early_stopping = c.get_int("train.early_stopping");
  check_non_negative(o.valid_every, "train.valid_every");
  check_non_negative(o.save_every, "train.save_every");
  check_non_negative(o.keep_last, "train.keep_last");
  check_non_negative(o.early_stopping, "train.early_stopping");
  o.skip_nan_batches = c.get_bool("train.skip_nan_batches");
  o.bcd.g_every = c.get_int("train.bcd.g_every");
  o.bcd.g_offset = c.get_int("train.bcd.g_offset");
  MOE_CHECK(o.bcd.g_every >= 1 && o.bcd.g_offset >= 0 && o.bcd.g_offset < o.bcd.g_every, "train.bcd.g_every (",
            o.bcd.g_every, ") must be >= 1 and train.bcd.g_offset (", o.bcd.g_offset, ") in [0, g_every)");
  o.gate_lr = c.get_float("train.gate_lr");
  MOE_CHECK(o.gate_lr > 0, "train.gate_lr must be > 0, got ", o.gate_lr);
  o.loss_scale = c.get_float("train.loss_scale");
  MOE_CHECK(o.loss_scale >= 1, "train.loss_scale must be >= 1, got ", o.loss_scale);
  o.loss_scale_window = c.get_int("train.loss_scale_window");
  check_positive(o.loss_scale_window, "train.loss_scale_window");

  ValidOptions& v = o.valid;
  v.metric = c.get_string("valid.metric");
  MOE_CHECK(v.metric == "loss" || v.metric == "ppl" || v.metric == "bleu", "valid.metric: '", v.metric,
            "' is not one of loss, ppl, bleu");
  v.max_tokens = c.get_int("valid.max_tokens");
  check_positive(v.max_tokens, "valid.max_tokens");
  v.beam = static_cast<int>(c.get_int("valid.beam"));
  check_positive(v.beam, "valid.beam");
  v.lenpen = c.get_float("valid.lenpen");
  v.max_len_a = c.get_float("valid.max_len_a");
  v.max_len_b = c.get_int("valid.max_len_b");
  v.bleu_lines = c.get_int("valid.bleu_lines");
  check_non_negative(v.bleu_lines, "valid.bleu_lines");
  v.bleu = c.get_bool("valid.bleu") || v.metric == "bleu";
  MOE_CHECK(!v.bleu || o.task == TrainTaskKind::translation,
            "valid.metric bleu / valid.bleu: BLEU needs a "
            "translation model; a ",
            task_name(o.task), " validates with valid.metric loss or ppl");
  MOE_CHECK(v.metric != "bleu" || !d.valid_src.empty(), "valid.metric bleu needs data.valid.src and data.valid.tgt");
  v.context = c.get_int("valid.context");
  v.stride = c.get_int("valid.stride");
  check_non_negative(v.context, "valid.context");
  check_non_negative(v.stride, "valid.stride");
  return o;
}

}  // namespace moe
