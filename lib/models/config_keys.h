// The keys the model configs share (the Transformer, the Transformer LMs, the LSTM LM), declared once
// for every config struct that has the members: the fixed `type` of a single-type config, the special ids the trainer fills in, the Transformer
// widths, the Transformer's regularisation and output knobs, and the attention / feed-forward sites.
// Each adds its keys in the order the configs have always written them (checkpoints store the
// architecture as YAML text, which --resume compares). Covered by tests/models/model_registry_test.cpp.
#pragma once
#include "config/keys.h"

namespace moe::model_keys {

/// `type`, for a config struct that serves one model type only: read and written as `name`.
template <class C>
void add_fixed_type(config::Keys<C>& k, const char* name) {
  k.add_custom(
      "type", config::ValueType::String, name, [](const YAML::Node&, C&, const std::string&) {},
      [name](const C&) { return YAML::Node(name); });
}

template <class C>
void add_special_ids(config::Keys<C>& k) {
  k.add("pad_id", &C::pad_id, "<pad> id").internal();
  k.add("bos_id", &C::bos_id, "<s> id").internal();
  k.add("eos_id", &C::eos_id, "</s> id").internal();
}

template <class C>
void add_widths(config::Keys<C>& k) {
  k.add("d_model", &C::d_model, "model width", config::at_least<int64_t>(1));
  k.add("ffn_dim", &C::ffn_dim, "feed-forward inner width", config::at_least<int64_t>(1));
  k.add("heads", &C::heads, "attention heads", config::at_least(1));
}

template <class C>
void add_embedding_and_dropout(config::Keys<C>& k) {
  k.add("scale_embeddings", &C::scale_embeddings, "multiply embeddings by sqrt(d_model)");
  k.add("dropout", &C::dropout, "dropout on embeddings and residual branches");
  k.add("activation_dropout", &C::activation_dropout, "dropout after the feed-forward activation");
  k.add("attention_dropout", &C::attention_dropout, "dropout on the attention weights (every attention site)",
        [](const float& p, const std::string& key) { MOE_CHECK(p >= 0 && p < 1, key, " must be in [0, 1), got ", p); });
  k.add("activation", &C::activation, "feed-forward activation");
  k.add("max_positions", &C::max_positions, "longest sequence", config::at_least<int64_t>(1));
}

template <class C>
void add_sites(config::Keys<C>& k) {
  k.add("attention", &C::attention, "attention variant: {type: mha | mae | moa, ...its options}");
  k.add("ffn", &C::ffn, "feed-forward variant: {type: dense | moe, ...its options}");
}

}  // namespace moe::model_keys
