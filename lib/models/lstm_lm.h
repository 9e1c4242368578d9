// LSTM language models (type "lstm_lm") as in Shazeer et al. 2017 App. C.1 and Jozefowicz et al.
// 2016: embedding -> dropout -> LSTM layers (optional output projection, LSTM-2048-512), each
//   x <- dropout(lstm(x)) + x     (the residual when the sizes agree and `residual` is on)
// with, after the layers listed in `moe_after`, the sparse mixture-of-experts layer
//   x <- dropout(sigmoid(moe(x))) + x
// (the feed-forward site of lib/layers/sites.h, type "moe" unless `moe.type` says otherwise), then a
// softmax over the vocabulary (plain, tied to the embedding, or adaptive); with sampled_softmax = k,
// training scores the targets against k words sampled per batch (models/sampled_softmax.h).
// Covered by tests/models/lstm_lm_test.cpp, tests/models/sampled_softmax_test.cpp and (a shortlist's restricted
// steps) tests/translator/shortlist_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <vector>

#include "config/keys.h"
#include "layers/lstm.h"
#include "layers/sites.h"
#include "models/adaptive.h"
#include "models/model.h"

namespace moe {

struct LstmLmConfig {
  int64_t vocab = 0;  // filled from the vocabulary
  int pad_id = 0, bos_id = 2, eos_id = 3;
  int64_t embed_dim = 512, hidden = 512, projection = 0;  // projection 0: none
  int layers = 2;
  float dropout = 0.1f;
  bool residual = true;
  std::vector<int> moe_after;  // layer indices (0-based) followed by a MoE layer
  YAML::Node moe;              // the MoE site's options ({type: moe, experts, k, hidden, ...})
  bool tie_embeddings = false;
  std::vector<int64_t> adaptive_softmax_cutoffs;  // empty = full softmax
  double adaptive_softmax_factor = 4;
  float adaptive_softmax_dropout = 0.f;
  int64_t sampled_softmax = 0;  // > 0: words sampled per training batch (models/sampled_softmax.h)

  /// The keys of model type lstm_lm.
  static const config::Keys<LstmLmConfig>& keys();
  static LstmLmConfig from_yaml(const YAML::Node& node);
  YAML::Node to_yaml() const;
  int64_t out_dim() const { return projection > 0 ? projection : hidden; }
};

class LstmLm : public Model, public Decoder {
 public:
  explicit LstmLm(LstmLmConfig config);
  const LstmLmConfig& config() const { return c_; }
  std::string type() const override { return "lstm_lm"; }
  std::string site_types() const override;
  std::vector<ModelRoutedSite> routed_sites() const override { return routed_; }
  YAML::Node config_yaml() const override { return c_.to_yaml(); }
  bool is_language_model() const override { return true; }
  Expr lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const override;

  /// Top-layer states [B, T, out_dim] for input ids [B, T]; `states` (one per layer) carry the recurrence.
  Expr hidden(const Builder& b, const Tensor& input, std::vector<LstmState>* states = nullptr) const;
  using Model::loss;  // a translation batch's (Model's: an error for a language model), beside this one
  /// Summed loss of targets [B, T], each target's times its mask value (0/1, or data weighting's weights; mask
  /// undefined = all 1). lm_loss passes batch.weights when defined.
  Expr loss(const Builder& b, const Tensor& input, const Tensor& target, const Tensor& mask,
            float label_smoothing) const;
  /// Log-probabilities [B * T, V] (f32).
  Expr log_probs(const Builder& b, const Tensor& input) const;

  /// Incremental decoding (models/decoder.h): one recurrent state per layer.
  struct State : DecoderState {
    std::vector<LstmState> layers;
    void reorder(const Builder& b, const Tensor& origin) override;
  };
  const Decoder* decoder() const override { return this; }
  DecoderSpec spec() const override;
  /// Empty recurrent states; src and src_mask are not read.
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src = {},
                                      const Tensor& src_mask = {}) const override;
  /// Log-probabilities over the whole vocabulary, or over the entries restrict_output kept (a shortlist).
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  /// The output matrix [V, out_dim] (f32); undefined with an adaptive softmax (no shortlist then).
  Expr output_weight(const Builder& b) const override;

 private:
  /// Log-softmax of rows x the output matrix, or of rows x `weight_rows` (a shortlist's rows, compute dtype).
  Expr output_log_probs(const Builder& b, const Expr& rows, const Tensor& weight_rows = {}) const;
  AdaptiveSpec softmax_spec() const {
    return AdaptiveSpec{c_.vocab, c_.out_dim(), c_.adaptive_softmax_cutoffs, c_.adaptive_softmax_factor};
  }
  AdaptiveSoftmaxWeights softmax_weights(const Builder& b) const;
  Expr output_param(const Builder& b) const;  // [V, out_dim], f32, whatever the softmax
  Expr output_matrix(const Builder& b) const;

  LstmLmConfig c_;
  std::map<int, std::shared_ptr<const FfnSite>> moe_sites_;  // by the layer they follow
  std::vector<ModelRoutedSite> routed_;
};

}  // namespace moe
