// create_model(): the table of architectures, and the default (error) implementations of Model.
#include "common/error.h"
#include "models/lstm_lm.h"
#include "models/model.h"
#include "models/transformer_lm.h"
#include "models/transformer_model.h"

namespace moe {

Expr Model::loss(const Builder&, const data::Batch&, float) const {
  MOE_FAIL("model type '", type(), "' is a language model: it has no translation loss");
}

Expr Model::lm_loss(const Builder&, const data::LmBatch&, float) const {
  MOE_FAIL("model type '", type(), "' is a translation model: it has no language-model loss");
}

std::unique_ptr<Model> create_model(const YAML::Node& model) {
  const std::string type = model && model["type"] ? model["type"].as<std::string>() : "transformer";
  if (type == "transformer") return std::make_unique<TransformerModel>(TransformerConfig::from_yaml(model));
  if (type == "transformer_lm" || type == "transformer_mlm")
    return std::make_unique<TransformerLm>(TransformerLmConfig::from_yaml(model));
  if (type == "lstm_lm") return std::make_unique<LstmLm>(LstmLmConfig::from_yaml(model));
  MOE_FAIL("model.type: unknown model type '", type,
           "' (known: transformer, transformer_lm, transformer_mlm, lstm_lm)");
}

}  // namespace moe
