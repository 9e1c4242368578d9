// The built-in model types, one registration line each. A new model type adds its own files (config
// with a key table, the model) and one line here. Covered by tests/models/model_registry_test.cpp.
#include "models/lstm_lm.h"
#include "models/lstm_seq2seq.h"
#include "models/model_registry.h"
#include "models/transformer_lm.h"
#include "models/transformer_model.h"

namespace moe {

void register_builtin_models(ModelRegistry& r) {
  r.add(model_type<TransformerConfig, TransformerModel>("transformer", ModelKind::translation));
  r.add(model_type<TransformerLmConfig, TransformerLm>("transformer_lm", ModelKind::language_model));
  r.add(model_type<TransformerLmConfig, TransformerLm>("transformer_mlm", ModelKind::masked_lm));
  r.add(model_type<LstmLmConfig, LstmLm>("lstm_lm", ModelKind::language_model));
  r.add(model_type<LstmSeq2seqConfig, LstmSeq2seq>("lstm_seq2seq", ModelKind::translation));
}

}  // namespace moe
