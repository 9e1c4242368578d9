// train_options.h implementation: the one key table of moe-train's data.*, train.*, valid.*, dist.*
// keys and run_dir (name, member, default from TrainOptions' initialisers, help, check), the model
// section, and the checks across keys (the language-model rules: lm_options.cpp).
// Covered by tests/training/train_options_test.cpp and tests/training/lm_options_test.cpp.
#include "training/train_options.h"

#include <algorithm>

#include "common/error.h"

namespace moe {

namespace {
using config::above;
using config::at_least;
using O = TrainOptions;
using D = DataOptions;

config::Check<std::string> not_empty() {
  return [](const std::string& v, const std::string& key) { MOE_CHECK(!v.empty(), key, " must not be empty"); };
}

void declare_data(config::Keys<O>& k) {
  k.add("data.train.src", &O::data, &D::train_src, "training source text (plain or .gz, one sentence per line)")
      .add("data.train.tgt", &O::data, &D::train_tgt, "training target text, line-aligned with data.train.src")
      .add("data.train.alignment", &O::data, &D::train_alignment,
           "word alignments of the training pairs for guided-alignment training (Marian's --guided-alignment): one "
           "line of 's-t' links per pair, s and t 0-based positions of the pair's subword tokens as the "
           "vocabularies encode them (moe-vocab lex --alignments writes them); empty: none")
      .add("data.train.weights", &O::data, &D::train_weights,
           "weights of the training pairs in the loss (Marian's --data-weighting): one line per pair (a causal "
           "LM: per line of data.train.text) of numbers >= 0, one per line or one per target subword token "
           "(data.train.weighting); each target token's cross-entropy is multiplied by its weight; empty: none")
      .add("data.train.weighting", &O::data, &D::weighting,
           "with data.train.weights: sentence (one weight a line) or word (one per target subword token, and "
           "optionally one for </s>)")
      .add_at<double>(
          "data.train.subword_alpha", [](O& o) -> double& { return o.data.subword.alpha; },
          "subword regularisation (SentencePiece vocabularies): every epoch segments the training pairs anew, a "
          "unigram model sampling with smoothing alpha (Kudo 2018: 0.1-0.5), a BPE model dropping each merge with "
          "probability alpha (BPE-dropout: 0.1); 0 = off, the one best segmentation",
          at_least(0.0))
      .add_at<int>(
          "data.train.subword_nbest", [](O& o) -> int& { return o.data.subword.nbest; },
          "with data.train.subword_alpha and a unigram vocabulary: sample among the nbest best segmentations (-1: "
          "all)")
      .add("data.valid.src", &O::data, &D::valid_src, "validation source text (empty: no validation)")
      .add("data.valid.tgt", &O::data, &D::valid_tgt, "validation target text (the reference for BLEU)")
      .add("data.vocab.src", &O::data, &D::src_vocab,
           "source vocabulary (.spm/.model = SentencePiece, else a word list); built from the training data when "
           "missing")
      .add("data.vocab.tgt", &O::data, &D::tgt_vocab,
           "target vocabulary; the same path as data.vocab.src = one joint vocabulary")
      .add("data.vocab.size", &O::data, &D::vocab_size,
           "size of a SentencePiece vocabulary built by moe-train; for a word list, when set: keep the N most "
           "frequent words",
           above(0))
      .add_custom(
          "data.vocab.type", config::ValueType::String,
          "kind of a built vocabulary: bpe | unigram (SentencePiece; spm = bpe) | word (language models' word lists, "
          "for a data.vocab.path that is not .spm/.model)",
          [](const YAML::Node& v, O& o, const std::string& key) {
            o.data.vocab_type = v.Scalar() == "spm" ? VocabType::bpe : parse_enum<VocabType>(v.Scalar(), key);
          },
          [](const O& o) { return YAML::Node(enum_name(o.data.vocab_type)); })
      .add("data.vocab.normalization", &O::data, &D::vocab_normalization,
           "SentencePiece normalisation rule for a built vocabulary")
      .add("data.vocab.character_coverage", &O::data, &D::vocab_character_coverage,
           "SentencePiece character coverage for a built vocabulary")
      .add("data.vocab.sentences", &O::data, &D::vocab_sentences, "sentences sampled to build a vocabulary (0 = all)")
      .add("data.max_len", &O::data, &D::max_len,
           "drop training pairs with a side longer than this many tokens (0 = no limit)", at_least<int64_t>(0))
      .add("data.max_ratio", &O::data, &D::max_ratio,
           "drop training pairs whose length ratio exceeds this (0 = no limit)")
      .add("data.cache_dir", &O::data, &D::cache_dir, "folder for token caches (empty: beside the texts)")
      .add("data.skip_invalid_utf8", &O::data, &D::skip_invalid_utf8,
           "replace lines with invalid UTF-8 by empty lines (dropped) instead of failing")
      // Language models (lm_options.cpp checks which task's keys a recipe may set).
      .add("data.train.text", &O::data, &D::train_text,
           "language models: the training text (plain or .gz; </s> after every line)")
      .add("data.valid.text", &O::data, &D::valid_text, "language models: the validation text (empty: no validation)")
      .add("data.vocab.path", &O::data, &D::vocab_path,
           "language models: the vocabulary (.spm/.model = SentencePiece, else a word list of 'word count' lines); "
           "built from data.train.text when missing")
      .add("data.vocab.min_count", &O::data, &D::vocab_min_count,
           "word lists built by moe-train: words seen fewer times map to <unk> (1 = every word; a corpus's own "
           "<unk> tokens map to <unk> either way)",
           at_least<int64_t>(1))
      .add("data.tokens_per_sample", &O::data, &D::tokens_per_sample,
           "language models: tokens per training block (and per masked-LM block)", above<int64_t>(0))
      .add_at<double>(
          "data.mlm.mask_prob", [](O& o) -> double& { return o.data.mlm.mask_prob; },
          "masked LM: fraction of the tokens selected for the loss",
          [](const double& p, const std::string& key) {
            MOE_CHECK(p > 0 && p <= 1, key, " must be in (0, 1], got ", p);
          })
      .add_at<double>(
          "data.mlm.replace_mask", [](O& o) -> double& { return o.data.mlm.replace_mask; },
          "masked LM: selected tokens replaced by <mask>")
      .add_at<double>(
          "data.mlm.replace_random", [](O& o) -> double& { return o.data.mlm.replace_random; },
          "masked LM: selected tokens replaced by a random token")
      .add_at<int32_t>(
          "data.mlm.mask_id", [](O& o) -> int32_t& { return o.data.mlm.mask_id; },
          "masked LM: the <mask> id (-1: the vocabulary's <mask> token, else one appended after the vocabulary)",
          [](const int32_t& id, const std::string& key) {
            MOE_CHECK(id >= -1, key, " must be >= 0 (or -1 = automatic), got ", id);
          });
}

void declare_train(config::Keys<O>& k) {
  k.add("train.max_tokens", &O::max_tokens,
        "tokens per batch: translation per side, padding included; language models: max_tokens / "
        "data.tokens_per_sample blocks",
        above<int64_t>(0))
      .add("train.max_sentences", &O::max_sentences, "sentences per batch (0 = no limit)", at_least<int64_t>(0))
      .add("train.update_freq", &O::update_freq, "batches accumulated into one update", above<int64_t>(0))
      .add("train.max_updates", &O::max_updates, "stop after this many updates (0 = no limit)", at_least<int64_t>(0))
      .add("train.max_epochs", &O::max_epochs,
           "stop after this many epochs (0 = no limit); with train.max_updates 0, a cosine or linear schedule "
           "decays over the updates of these epochs (counted from the data)",
           at_least<int64_t>(0))
      .add("train.max_minutes", &O::max_minutes,
           "stop after this many minutes of training in this process (0 = no limit)", at_least(0.0))
      .add("train.init_from", &O::init_from,
           "start from this checkpoint's parameters (same names and shapes; parameters it lacks keep their "
           "initialisation); --resume takes precedence")
      .add("train.trainable", &O::trainable,
           "train only these parameters: parameter groups (e.g. gate) or regexes over full names (e.g. "
           "'.*attn\\.o\\..*'); empty = all (MAE fine-tuning: FTG [gate], FTG+ [gate, '.*_attn\\.o\\..*'])")
      .add("train.seed", &O::seed, "seed of initialisation, shuffling and dropout")
      .add("train.device", &O::device, "cpu | cuda | cuda:N | auto (a GPU when present)")
      .add_custom(
          "train.dtype", config::ValueType::String,
          "compute dtype: f32 | bf16 | f16 (f32 master weights; f16 adds loss scaling) | auto (bf16 on a GPU, f32 on "
          "the CPU)",
          [](const YAML::Node& v, O& o, const std::string& key) {
            const std::string dt = v.Scalar();
            MOE_CHECK(dt == "f32" || dt == "bf16" || dt == "f16" || dt == "auto", key, ": '", dt,
                      "' is not one of f32, bf16, f16, auto");
            o.dtype_auto = dt == "auto";
            o.dtype = o.dtype_auto ? DType::f32 : dtype_from_name(dt);  // auto: resolved by the Trainer
          },
          [](const O& o) { return YAML::Node(o.dtype_auto ? "auto" : dtype_name(o.dtype)); })
      .add("train.label_smoothing", &O::label_smoothing, "label smoothing of the training loss",
           [](const float& v, const std::string& key) {
             MOE_CHECK(v >= 0 && v < 1, key, " must be in [0, 1), got ", v);
           })
      .add("train.guided_alignment.weight", &O::guided_alignment, &GuidedAlignmentOptions::weight,
           "with data.train.alignment: the weight of the alignment cost beside the cross-entropy (Marian's "
           "--guided-alignment-weight)",
           at_least(0.0))
      .add("train.guided_alignment.cost", &O::guided_alignment, &GuidedAlignmentOptions::cost,
           "with data.train.alignment: ce (cross-entropy of the alignment head against the links) or mse")
      .add("train.clip_norm", &O::clip_norm, "clip the gradient norm to this (0 = off)", at_least(0.0))
      .add("train.optimizer", &O::optimizer, "optimizer")
      .add_custom(
          "train.betas", config::ValueType::FloatList, "Adam betas",
          [](const YAML::Node& v, O& o, const std::string& key) {
            const auto betas = config::detail::from_yaml<std::vector<double>>(v, key);
            MOE_CHECK(betas.size() == 2, key, " needs two values, got ", betas.size());
            o.optim.beta1 = betas[0];
            o.optim.beta2 = betas[1];
          },
          [](const O& o) {
            return config::detail::to_yaml(std::vector<double>{o.optim.beta1, o.optim.beta2});
          })
      .add("train.eps", &O::optim, &OptimizerOptions::eps, "Adam epsilon")
      .add("train.weight_decay", &O::optim, &OptimizerOptions::weight_decay,
           "weight decay (decoupled for adamw, L2 otherwise)")
      .add("train.momentum", &O::optim, &OptimizerOptions::momentum, "momentum of sgd / nag")
      .add("train.lr", &O::schedule, &ScheduleOptions::lr, "peak learning rate")
      .add("train.schedule", &O::schedule, &ScheduleOptions::kind, "learning-rate schedule after a linear warm-up")
      .add("train.warmup_updates", &O::schedule, &ScheduleOptions::warmup_updates, "linear warm-up updates")
      .add("train.hold_updates", &O::schedule, &ScheduleOptions::hold_updates,
           "inverse_sqrt: updates at the full lr after the warm-up before the decay starts")
      .add("train.min_lr", &O::schedule, &ScheduleOptions::min_lr, "floor of the learning rate after the warm-up")
      .add("train.log_every", &O::log_every, "log training figures every N updates", above<int64_t>(0))
      .add("train.valid_every", &O::valid_every, "validate every N updates (0 = only at the end)", at_least<int64_t>(0))
      .add("train.save_every", &O::save_every, "save checkpoint.last (and a numbered one) every N updates",
           at_least<int64_t>(0))
      .add("train.keep_last", &O::keep_last, "keep the last N numbered checkpoints (0 = none)", at_least<int64_t>(0))
      .add("train.numbered_checkpoints", &O::numbered_checkpoints,
           "when numbered checkpoints are written: updates (at every save_every) | epochs (at the end of every "
           "epoch, for averaging the last epochs; save_every then writes checkpoint.last only)")
      .add("train.early_stopping", &O::early_stopping, "stop after N validations without improvement (0 = off)",
           at_least<int64_t>(0))
      .add("train.skip_nan_batches", &O::skip_nan_batches, "skip batches with a NaN/Inf loss instead of stopping")
      .add("train.ema_decay", &O::ema_decay,
           "exponential moving average of the parameters, ema = d ema + (1 - d) params after every update (e.g. "
           "0.9999; 0 = off): validation and checkpoint.best use it, checkpoint.ema.safetensors holds it",
           [](const double& v, const std::string& key) {
             MOE_CHECK(v >= 0 && v < 1, key, " must be in [0, 1), got ", v);
           })
      .add("train.bcd.g_every", &O::bcd, &BcdSchedule::g_every,
           "MAE block coordinate descent: gate (G) updates in epochs e (counted from 1) with e mod g_every == "
           "g_offset; expert (F) updates always")
      .add("train.bcd.g_offset", &O::bcd, &BcdSchedule::g_offset,
           "MAE: see train.bcd.g_every (0 with 5: G updates in epochs 5, 10, 15, ...)")
      .add("train.gate_lr", &O::gate_lr,
           "MAE gates (parameter group gate): learning rate of their plain SGD (no momentum)", above(0.0))
      .add("train.loss_scale", &O::loss_scale, "f16: initial dynamic loss scale", at_least(1.0))
      .add("train.loss_scale_window", &O::loss_scale_window, "f16: clean updates before the loss scale doubles",
           above<int64_t>(0))
      .add("train.on_signal", &O::on_signal,
           "on SIGTERM, SIGINT or SIGUSR1: save-and-exit (stop at the next micro-batch, dropping a partial update, "
           "save checkpoint.last, exit with status 75; --resume continues exactly) | exit (end at once)");
}

void declare_valid(config::Keys<O>& k) {
  using V = ValidOptions;
  k.add("valid.metric", &O::valid, &V::metric, "the metric of early stopping and checkpoint.best")
      .add_table("valid", [](O& o) -> DecodingOptions& { return o.valid.decoding; }, decoding_keys(), {"max_tokens"},
                 "validation: ")
      .add_table("valid", [](O& o) -> DecodingOptions& { return o.valid.decoding; }, decoding_keys(),
                 best_hypothesis_search_keys(), "BLEU validation: ")
      .add("valid.bleu_lines", &O::valid, &V::bleu_lines, "BLEU validation on the first N lines (0 = all)",
           at_least<int64_t>(0))
      .add("valid.bleu", &O::valid, &V::bleu,
           "decode the valid set for BLEU at every validation (implied by valid.metric bleu)")
      .add("valid.context", &O::valid, &V::context,
           "language models: validation window length (0 = data.tokens_per_sample)", at_least<int64_t>(0))
      .add("valid.stride", &O::valid, &V::stride,
           "language models: targets scored per later window, each with at least context - stride tokens of "
           "history (0 = context / 2)",
           at_least<int64_t>(0));
}

void declare_eval(config::Keys<O>& k) {
  using E = EvalOptions;
  k.add("eval.average_last", &O::eval, &E::average_last,
        "scripts/evaluate.sh: average the last N numbered checkpoints, as the paper (0: checkpoint.best)",
        at_least<int64_t>(0))
      .add_table("eval", [](O& o) -> DecodingOptions& { return o.eval.decoding; }, decoding_keys(), {"beam", "lenpen"},
                 "scripts/evaluate.sh (moe-translate): ")
      .add("eval.paper_bleu", &O::eval, &E::paper_bleu,
           "scripts/evaluate.sh: the paper's BLEU beside sacreBLEU: none | tokenized (the tokenized text as it is) | "
           "compound_split (13a tokens, hyphens split as ##AT##: WMT14 En-De)");
}

void declare_dist(config::Keys<O>& k) {
  k.add("dist.backend", &O::dist, &DistOptions::backend,
        "communicator: auto (nccl on GPUs, mpi on CPUs when launched by mpirun/srun with several ranks, else none) "
        "| nccl | mpi | none",
        [](const std::string& b, const std::string& key) {
          MOE_CHECK(b == "auto" || b == "nccl" || b == "mpi" || b == "none", key,
                    " must be auto, nccl, mpi or none, got '", b, "'");
        })
      .add("dist.bucket_mb", &O::dist, &DistOptions::bucket_mb,
           "gradient all-reduce bucket size in MiB (buckets overlap the backward pass)", above(0.0))
      .add_custom(
          "dist.shard_optimizer", config::ValueType::String,
          "ZeRO stage 1: each rank keeps and updates 1/N of the optimizer state: auto (on past 2 ranks) | on | off",
          [](const YAML::Node& v, O& o, const std::string& key) {
            const std::string s = v.Scalar() == "true" ? "on" : v.Scalar() == "false" ? "off" : v.Scalar();
            o.dist.shard_optimizer = parse_enum<ShardOptimizer>(s, key);
          },
          [](const O& o) { return YAML::Node(enum_name(o.dist.shard_optimizer)); })
      .add("dist.timeout", &O::dist, &DistOptions::timeout,
           "seconds a collective may wait for the other ranks before the job aborts (0 = never)", at_least(0.0));
}
}  // namespace

const config::Keys<TrainOptions>& train_keys() {
  static const config::Keys<O> keys = [] {
    config::Keys<O> k("moe-train");
    k.add("run_dir", &O::run_dir, "folder for checkpoints, metrics.jsonl and the dumped config", not_empty());
    declare_data(k);
    declare_train(k);
    declare_valid(k);
    declare_eval(k);
    declare_dist(k);
    return k;
  }();
  return keys;
}

void register_train_keys(config::Schema& s) {
  train_keys().declare(s, "");
  for (const ModelType& t : ModelRegistry::instance().types()) t.declare(s);
}

TrainTaskKind task_of_model_type(const std::string& type) {
  const ModelType* t = ModelRegistry::instance().find(type);
  return t ? t->kind : TrainTaskKind::translation;
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

YAML::Node model_section(const config::Config& c) {
  const std::string type = c.get_string("model.type");
  const std::vector<std::string>& own = model_keys_of(type);
  YAML::Node m(YAML::NodeType::Map);
  for (const auto& [name, entry] : c.entries()) {
    if (name.rfind("model.", 0) != 0) continue;
    const std::string key = name.substr(6);
    const bool mine = key == "type" || std::find(own.begin(), own.end(), key) != own.end();
    const bool set = entry.source != "default";
    const bool at_default = YAML::Dump(entry.value) == YAML::Dump(c.schema().at(name).default_value);
    if (mine ? set || key == "type" : set && !at_default) m[key] = YAML::Clone(entry.value);
  }
  for (const char* k : {"attention", "ffn", "moe"})
    if (m[k] && m[k].IsMap() && m[k].size() == 0) m.remove(k);
  return m;
}

TrainOptions TrainOptions::from_config(const config::Config& c) {
  TrainOptions o;
  train_keys().read(c, o, "");
  o.model = model_section(c);
  o.task = task_of_model_type(c.get_string("model.type"));
  const DataOptions& d = o.data;
  read_lm_options(c, o);  // which task's keys may be set, and the language-model rules
  MOE_CHECK(!d.train_weights.empty() || !c.changed("data.train.weighting"), "data.train.weighting is set (",
            c.source("data.train.weighting"), ") but data.train.weights is empty: it says how to read that file");
  if (o.task == TrainTaskKind::translation) {
    MOE_CHECK(!d.train_src.empty() && !d.train_tgt.empty(), "data.train.src and data.train.tgt are required");
    MOE_CHECK(d.valid_src.empty() == d.valid_tgt.empty(), "data.valid.src ('", d.valid_src, "') and data.valid.tgt ('",
              d.valid_tgt, "') must be given together");
    MOE_CHECK(!d.src_vocab.empty() && !d.tgt_vocab.empty(),
              "data.vocab.src and data.vocab.tgt are required (give the same path twice for a joint vocabulary; a "
              "missing file is built from the training data)");
    MOE_CHECK(d.vocab_type != VocabType::word,
              "data.vocab.type word is for language models; a translation vocabulary is a SentencePiece model (bpe | "
              "unigram) or a word list named by its path");
    for (const char* k : {"train.guided_alignment.weight", "train.guided_alignment.cost"})
      MOE_CHECK(!d.train_alignment.empty() || !c.changed(k), k, " is set (", c.source(k),
                ") but data.train.alignment is empty: guided alignment needs the training pairs' word alignments");
    MOE_CHECK(d.subword.nbest == -1 || d.subword.nbest >= 2, "data.train.subword_nbest must be -1 (all) or >= 2, not ",
              d.subword.nbest);
    MOE_CHECK(d.subword.enabled() || !c.changed("data.train.subword_nbest"), "data.train.subword_nbest is set (",
              c.source("data.train.subword_nbest"), ") but data.train.subword_alpha is 0: sampling is off");
    if (d.subword.enabled()) {
      MOE_CHECK(d.train_alignment.empty(),
                "data.train.subword_alpha and data.train.alignment exclude each other: "
                "the links name token positions of the one best segmentation");
      MOE_CHECK(d.train_weights.empty() || d.weighting == data::WeightingType::sentence,
                "data.train.subword_alpha and data.train.weighting word exclude each other: word weights follow the "
                "tokens of the one best segmentation (sentence weights do not)");
    }
  }
  MOE_CHECK(o.max_updates > 0 || o.max_epochs > 0 || o.max_minutes > 0,
            "set train.max_updates, train.max_epochs or train.max_minutes (all are 0)");
  o.schedule.max_updates = o.max_updates;
  o.schedule.max_epochs = o.max_epochs;
  const YAML::Node sampled = o.model["sampled_softmax"];  // the LSTM LM's key, checked by its model later
  MOE_CHECK(!sampled || sampled.Scalar() == "0" || o.label_smoothing == 0,
            "model.sampled_softmax: train with train.label_smoothing 0, not ", o.label_smoothing);
  MOE_CHECK(o.bcd.g_every >= 1 && o.bcd.g_offset >= 0 && o.bcd.g_offset < o.bcd.g_every, "train.bcd.g_every (",
            o.bcd.g_every, ") must be >= 1 and train.bcd.g_offset (", o.bcd.g_offset, ") in [0, g_every)");
  const data::MlmOptions& m = d.mlm;
  MOE_CHECK(m.replace_mask >= 0 && m.replace_random >= 0 && m.replace_mask + m.replace_random <= 1,
            "data.mlm.replace_mask (", m.replace_mask, ") and data.mlm.replace_random (", m.replace_random,
            ") must be >= 0 with a sum <= 1");
  ValidOptions& v = o.valid;
  v.bleu = v.bleu || v.metric == ValidMetric::bleu;
  MOE_CHECK(!v.bleu || o.task == TrainTaskKind::translation, "valid.metric bleu / valid.bleu: BLEU needs a ",
            "translation model; a ", task_name(o.task), " validates with valid.metric loss or ppl");
  MOE_CHECK(v.metric != ValidMetric::bleu || !d.valid_src.empty(),
            "valid.metric bleu needs data.valid.src and data.valid.tgt");
  return o;
}

}  // namespace moe
