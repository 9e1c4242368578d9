// The model section and the language-model rules of moe-train's options (train_options.h): which model
// keys each model type reads and their defaults (from the model registry), and the checks that keep the
// translation and language-model tasks' keys apart (a key of the other task set to a non-default value
// is an error naming it) and that a language model's vocabulary path fits its type.
// Covered by tests/training/lm_options_test.cpp.
#include <algorithm>

#include "common/error.h"
#include "training/train_options.h"

namespace moe {

const std::vector<std::string>& model_keys_of(const std::string& type) {
  static const std::vector<std::string> none;
  const ModelType* t = ModelRegistry::instance().find(type);
  return t ? t->keys : none;
}

void settle_model_keys(config::Config& c) {
  const std::string type = c.get_string("model.type");
  const ModelType* t = ModelRegistry::instance().find(type);
  if (!t) return;  // create_model names the unknown type
  const YAML::Node effective = t->complete(model_section(c));
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

const char* const kMlmKeys[] = {"data.mlm.mask_prob", "data.mlm.replace_mask", "data.mlm.replace_random",
                                "data.mlm.mask_id"};

void read_lm_data(const config::Config& c, TrainOptions& o, const std::string& what) {
  DataOptions& d = o.data;
  for (const char* k :
       {"data.train.src", "data.train.tgt", "data.train.alignment", "data.train.subword_alpha",
        "data.train.subword_nbest", "data.valid.src", "data.valid.tgt", "data.vocab.src", "data.vocab.tgt"})
    MOE_CHECK(!c.changed(k), k, " is a translation key; a ", what,
              " reads data.train.text, data.valid.text and data.vocab.path");
  MOE_CHECK(d.train_weights.empty() || o.task != TrainTaskKind::masked_lm, "data.train.weights: a ", what,
            " predicts masked tokens and takes no data weighting (translation, transformer_lm and lstm_lm do)");
  MOE_CHECK(!d.train_text.empty(), "data.train.text is required for a ", what,
            ": the training text, one paragraph or sentence a line");
  MOE_CHECK(!d.vocab_path.empty(), "data.vocab.path is required for a ", what,
            ": the vocabulary (.spm/.model = SentencePiece, else a word list), built from data.train.text when "
            "missing");
  const bool spm = ends_with(d.vocab_path, ".spm") || ends_with(d.vocab_path, ".model");
  if (spm) {
    MOE_CHECK(d.vocab_type != VocabType::word, "data.vocab.type word, but data.vocab.path '", d.vocab_path,
              "' names a SentencePiece model (.spm/.model); use a word-list name (e.g. vocab.words)");
  } else {
    // bpe is the default; unigram / spm name a SentencePiece model, which needs a .spm/.model path.
    const std::string type = c.get_string("data.vocab.type");
    MOE_CHECK(type == "word" || type == "bpe", "data.vocab.type ", type,
              " builds a SentencePiece model: give data.vocab.path a .spm or .model name (or use type word)");
    if (c.changed("data.vocab.size")) d.vocab_max_words = d.vocab_size;
  }
  if (o.task != TrainTaskKind::masked_lm)
    for (const char* k : kMlmKeys) MOE_CHECK(!c.changed(k), k, " applies to model.type transformer_mlm only");
}
}  // namespace

void read_lm_options(const config::Config& c, TrainOptions& o) {
  const std::string type = c.get_string("model.type");
  if (o.task != TrainTaskKind::translation) {
    read_lm_data(c, o, std::string(task_name(o.task)) + " (model.type " + type + ")");
    return;
  }
  for (const char* k : {"data.train.text", "data.valid.text", "data.vocab.path", "data.tokens_per_sample",
                        "valid.context", "valid.stride"})
    MOE_CHECK(!c.changed(k), k, " is a language-model key; model.type ", type,
              " trains a translation model on data.train.src / data.train.tgt");
  for (const char* k : kMlmKeys) MOE_CHECK(!c.changed(k), k, " applies to model.type transformer_mlm only");
}

}  // namespace moe
