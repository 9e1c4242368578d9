// The language-model part of moe-train's options (train_options.h): the data keys of LM and
// masked-LM training (data.train.text, data.valid.text, data.vocab.path / min_count,
// data.tokens_per_sample, data.mlm.*, valid.context / stride), the model keys of transformer_lm and
// lstm_lm, which model keys each model type reads, and the checks that keep the two tasks' keys
// apart (a key of the other task set to a non-default value is an error naming it).
// Covered by tests/training/lm_options_test.cpp.
#include <algorithm>

#include "common/error.h"
#include "models/lstm_lm.h"
#include "models/transformer_config.h"
#include "models/transformer_lm_config.h"
#include "training/train_options.h"

namespace moe {

void register_lm_keys(config::Schema& s) {
  s.add_string("data.train.text", "", "language models: the training text (plain or .gz; </s> after every line)");
  s.add_string("data.valid.text", "", "language models: the validation text (empty: no validation)");
  s.add_string("data.vocab.path", "",
               "language models: the vocabulary (.spm/.model = SentencePiece, else a word list of 'word count' "
               "lines); built from data.train.text when missing");
  s.add_int("data.vocab.min_count", 1,
            "word lists built by moe-train: words seen fewer times map to <unk> (1 = every word; a corpus's own "
            "<unk> tokens map to <unk> either way)");
  s.add_int("data.tokens_per_sample", 512, "language models: tokens per training block (and per masked-LM block)");
  const data::MlmOptions m;
  s.add_float("data.mlm.mask_prob", m.mask_prob, "masked LM: fraction of the tokens selected for the loss");
  s.add_float("data.mlm.replace_mask", m.replace_mask, "masked LM: selected tokens replaced by <mask>");
  s.add_float("data.mlm.replace_random", m.replace_random, "masked LM: selected tokens replaced by a random token");
  s.add_int("data.mlm.mask_id", -1,
            "masked LM: the <mask> id (-1: the vocabulary's <mask> token, else one appended after the vocabulary)");
  s.add_int("valid.context", 0, "language models: validation window length (0 = data.tokens_per_sample)");
  s.add_int("valid.stride", 0,
            "language models: targets scored per later window, each with at least context - stride tokens of "
            "history (0 = context / 2)");
  // Model keys of the language models (their from_yaml checks them); shared ones are in train_options.cpp.
  const TransformerLmConfig t;
  const LstmLmConfig l;
  s.add_int("model.layers", t.layers, "language models: layers (lstm_lm default 2)");
  s.add_bool("model.final_norm", t.final_norm, "transformer_lm: layer norm after the last layer (default: pre_norm)");
  s.add_string("model.positions", t.positions, "transformer_lm: sinusoidal | learned | none");
  s.add_ints("model.adaptive_input_cutoffs", {}, "transformer_lm: adaptive input bands (empty = plain embedding)");
  s.add_float("model.adaptive_input_factor", t.adaptive_input_factor, "adaptive input: width divisor per band");
  s.add_ints("model.adaptive_softmax_cutoffs", {}, "language models: adaptive softmax bands (empty = full softmax)");
  s.add_float("model.adaptive_softmax_factor", t.adaptive_softmax_factor, "adaptive softmax: width divisor per band");
  s.add_float("model.adaptive_softmax_dropout", t.adaptive_softmax_dropout, "adaptive softmax: tail dropout");
  s.add_bool("model.tie_adaptive_proj", t.tie_adaptive_proj, "transformer_lm: tail projections = adaptive input's");
  s.add_int("model.embed_dim", l.embed_dim, "lstm_lm: embedding width");
  s.add_int("model.hidden", l.hidden, "lstm_lm: LSTM cells per layer");
  s.add_int("model.projection", l.projection, "lstm_lm: LSTM output projection (0 = none)");
  s.add_bool("model.residual", l.residual, "lstm_lm: residual connections where the widths agree");
  s.add_ints("model.moe_after", {}, "lstm_lm: layers (0-based) followed by a mixture-of-experts layer");
  s.add_map("model.moe", "lstm_lm: the mixture-of-experts layer's options ({type: moe, experts, k, hidden, ...})");
}

namespace {
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0, j; i < text.size(); i = j + 1) {
    j = std::min(text.find(' ', i), text.size());
    if (j > i) out.push_back(text.substr(i, j - i));
  }
  return out;
}
}  // namespace

const std::vector<std::string>& model_keys_of(const std::string& type) {
  static const std::vector<std::string> transformer = words(
      "d_model ffn_dim heads enc_layers dec_layers pre_norm tie_embeddings scale_embeddings dropout "
      "activation_dropout activation max_positions attention ffn");
  static const std::vector<std::string> transformer_lm = words(
      "d_model ffn_dim heads layers pre_norm final_norm positions tie_embeddings scale_embeddings dropout "
      "activation_dropout activation max_positions adaptive_input_cutoffs adaptive_softmax_cutoffs "
      "adaptive_input_factor adaptive_softmax_factor adaptive_softmax_dropout tie_adaptive_proj attention ffn");
  static const std::vector<std::string> lstm_lm = words(
      "embed_dim hidden projection layers dropout residual moe_after moe tie_embeddings adaptive_softmax_cutoffs "
      "adaptive_softmax_factor adaptive_softmax_dropout");
  static const std::vector<std::string> none;
  if (type == "transformer") return transformer;
  if (type == "transformer_lm" || type == "transformer_mlm") return transformer_lm;
  if (type == "lstm_lm") return lstm_lm;
  return none;
}

void settle_model_keys(config::Config& c) {
  const std::string type = c.get_string("model.type");
  const YAML::Node section = model_section(c);
  YAML::Node effective;
  if (type == "transformer_lm" || type == "transformer_mlm")
    effective = TransformerLmConfig::from_yaml(section).to_yaml();
  else if (type == "lstm_lm")
    effective = LstmLmConfig::from_yaml(section).to_yaml();
  else if (type == "transformer")
    effective = TransformerConfig::from_yaml(section).to_yaml();
  else
    return;  // create_model names the unknown type
  for (const auto& kv : effective) {
    const std::string name = "model." + kv.first.as<std::string>();
    if (!c.schema().find(name) || c.source(name) != "default") continue;
    const YAML::Node& v = kv.second;
    std::string text;
    if (v.IsSequence()) {
      for (const auto& item : v) text += (text.empty() ? "" : ", ") + item.Scalar();
      text = "[" + text + "]";
    } else {
      text = v.IsScalar() ? v.Scalar() : YAML::Dump(v);
    }
    c.set_text(name, text, "the default of model.type " + type);
  }
}

namespace {
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

/// True when `key` holds a value other than its default (a dumped configuration lists defaults too).
bool changed(const config::Config& c, const std::string& key) {
  return YAML::Dump(c.get(key)) != YAML::Dump(c.schema().at(key).default_value);
}

const char* const kMlmKeys[] = {"data.mlm.mask_prob", "data.mlm.replace_mask", "data.mlm.replace_random",
                                "data.mlm.mask_id"};

void read_lm_data(const config::Config& c, TrainOptions& o, const std::string& what) {
  DataOptions& d = o.data;
  for (const char* k :
       {"data.train.src", "data.train.tgt", "data.valid.src", "data.valid.tgt", "data.vocab.src", "data.vocab.tgt"})
    MOE_CHECK(!changed(c, k), k, " is a translation key; a ", what,
              " reads data.train.text, data.valid.text and data.vocab.path");
  MOE_CHECK(!d.train_text.empty(), "data.train.text is required for a ", what,
            ": the training text, one paragraph or sentence a line");
  MOE_CHECK(!d.vocab_path.empty(), "data.vocab.path is required for a ", what,
            ": the vocabulary (.spm/.model = SentencePiece, else a word list), built from data.train.text when "
            "missing");
  const bool spm = ends_with(d.vocab_path, ".spm") || ends_with(d.vocab_path, ".model");
  if (spm) {
    MOE_CHECK(d.vocab_type != "word", "data.vocab.type word, but data.vocab.path '", d.vocab_path,
              "' names a SentencePiece model (.spm/.model); use a word-list name (e.g. vocab.words)");
  } else {
    // bpe is the default; unigram / spm name a SentencePiece model, which needs a .spm/.model path.
    const std::string type = c.get_string("data.vocab.type");
    MOE_CHECK(type == "word" || type == "bpe", "data.vocab.type ", type,
              " builds a SentencePiece model: give data.vocab.path a .spm or .model name (or use type word)");
    if (changed(c, "data.vocab.size")) d.vocab_max_words = d.vocab_size;
  }
  if (o.task != TrainTaskKind::masked_lm)
    for (const char* k : kMlmKeys) MOE_CHECK(!changed(c, k), k, " applies to model.type transformer_mlm only");
}
}  // namespace

void read_lm_options(const config::Config& c, TrainOptions& o) {
  DataOptions& d = o.data;
  d.train_text = c.get_string("data.train.text");
  d.valid_text = c.get_string("data.valid.text");
  d.vocab_path = c.get_string("data.vocab.path");
  d.vocab_min_count = c.get_int("data.vocab.min_count");
  MOE_CHECK(d.vocab_min_count >= 1, "data.vocab.min_count must be >= 1, got ", d.vocab_min_count);
  d.tokens_per_sample = c.get_int("data.tokens_per_sample");
  MOE_CHECK(d.tokens_per_sample > 0, "data.tokens_per_sample must be > 0, got ", d.tokens_per_sample);
  data::MlmOptions& m = d.mlm;
  m.mask_prob = c.get_float("data.mlm.mask_prob");
  m.replace_mask = c.get_float("data.mlm.replace_mask");
  m.replace_random = c.get_float("data.mlm.replace_random");
  m.mask_id = static_cast<int32_t>(c.get_int("data.mlm.mask_id"));
  MOE_CHECK(m.mask_prob > 0 && m.mask_prob <= 1, "data.mlm.mask_prob must be in (0, 1], got ", m.mask_prob);
  MOE_CHECK(m.replace_mask >= 0 && m.replace_random >= 0 && m.replace_mask + m.replace_random <= 1,
            "data.mlm.replace_mask (", m.replace_mask, ") and data.mlm.replace_random (", m.replace_random,
            ") must be >= 0 with a sum <= 1");
  MOE_CHECK(m.mask_id >= -1, "data.mlm.mask_id must be >= 0 (or -1 = automatic), got ", m.mask_id);
  const std::string type = c.get_string("model.type");
  if (o.task != TrainTaskKind::translation) {
    read_lm_data(c, o, std::string(task_name(o.task)) + " (model.type " + type + ")");
    return;
  }
  for (const char* k : {"data.train.text", "data.valid.text", "data.vocab.path", "data.tokens_per_sample",
                        "valid.context", "valid.stride"})
    MOE_CHECK(!changed(c, k), k, " is a language-model key; model.type ", type,
              " trains a translation model on data.train.src / data.train.tgt");
  for (const char* k : kMlmKeys) MOE_CHECK(!changed(c, k), k, " applies to model.type transformer_mlm only");
}

}  // namespace moe
