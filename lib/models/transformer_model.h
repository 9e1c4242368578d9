// TransformerModel: the encoder-decoder of transformer.h behind the Model interface (model.type
// transformer). Covered by tests/layers/transformer_test.cpp.
#pragma once
#include "models/model.h"
#include "models/transformer.h"

namespace moe {

class TransformerModel : public Model {
 public:
  explicit TransformerModel(TransformerConfig config) : net_(std::move(config)) {}
  std::string type() const override { return "transformer"; }
  YAML::Node config_yaml() const override { return net_.config().to_yaml(); }
  bool is_language_model() const override { return false; }
  Expr loss(const Builder& b, const data::Batch& batch, float label_smoothing) const override {
    b.context().target_tokens = batch.tgt_tokens;  // aux losses normalise against it
    return net_.loss(b, batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out, label_smoothing, batch.tgt_mask,
                     RealPositions{batch.src_rows, batch.tgt_rows, batch.tgt_labels}, batch.tgt_weights);
  }
  const Decoder* decoder() const override { return &net_; }
  const EncoderDecoder* encoder_decoder() const override { return &net_; }
  std::vector<std::string> future_sites() const override { return net_.future_sites(); }
  std::vector<ModelRoutedSite> routed_sites() const override { return net_.routed_sites(); }
  const Transformer& net() const { return net_; }

 private:
  Transformer net_;
};

}  // namespace moe
