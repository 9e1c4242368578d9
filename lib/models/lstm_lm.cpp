// lstm_lm.h implementation.
#include "models/lstm_lm.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/cross_entropy.h"
#include "graph/expr/dropout.h"
#include "graph/expr/embedding.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/unary.h"
#include "layers/sites.h"
#include "models/sampled_softmax.h"

namespace moe {

LstmLm::LstmLm(LstmLmConfig config) : c_(std::move(config)) {
  MOE_CHECK(c_.vocab > 0, "lstm_lm: model.vocab is ", c_.vocab, " (it is filled from the vocabulary)");
  if (!c_.adaptive_softmax_cutoffs.empty()) softmax_spec().validate("model.adaptive_softmax_cutoffs");
  // The mixture-of-experts layers (feed-forward type moe unless model.moe.type says otherwise), made
  // once for the width of the layer they follow; their hidden width defaults to 1024.
  int64_t dim = c_.embed_dim;
  for (int l = 0; l < c_.layers; ++l) {
    dim = LstmSpec{dim, c_.hidden, c_.projection}.out();
    if (std::find(c_.moe_after.begin(), c_.moe_after.end(), l) == c_.moe_after.end()) continue;
    const YAML::Node options = c_.moe && c_.moe.IsMap() ? c_.moe : YAML::Node(YAML::NodeType::Map);
    const int64_t hidden = options["hidden"] ? options["hidden"].as<int64_t>() : 1024;
    moe_sites_[l] = SiteRegistry::instance().ffn(options, FfnShape{dim, hidden, Activation::relu, 0.f}, "moe");
    // A language model refuses a routing that sees later tokens (check_routing).
    add_routed_ffn(routed_, *moe_sites_[l], FfnRole::lm, -1, "moe" + std::to_string(l), "model.moe",
                   "model.type lstm_lm");
  }
}

std::string LstmLm::site_types() const {
  return c_.moe_after.empty() ? "no moe layers (model.moe_after is empty)"
                              : fmt::format("moe layers after lstm {}", fmt::join(c_.moe_after, ", "));
}

Expr LstmLm::hidden(const Builder& b, const Tensor& input, std::vector<LstmState>* states) const {
  MOE_CHECK(input.shape().ndim() == 2 && input.dtype() == DType::i32, "lstm_lm: input must be i32 [B, T], not ",
            dtype_name(input.dtype()), " ", input.shape());
  MOE_CHECK(!states || static_cast<int>(states->size()) == c_.layers, "lstm_lm: ", states ? states->size() : 0,
            " recurrent states for ", c_.layers, " layers");
  Expr table = b.param("embed.tokens", Shape{c_.vocab, c_.embed_dim}, Init::normal(0, std::pow(c_.embed_dim, -0.5)));
  Expr x = dropout(embedding(table, input, 1.f, b.dtype()), c_.dropout);
  int64_t dim = c_.embed_dim;
  for (int l = 0; l < c_.layers; ++l) {
    const LstmSpec spec{dim, c_.hidden, c_.projection};
    Expr y = dropout(lstm_layer(b.layer(l, "lstm"), x, spec, states ? &(*states)[static_cast<size_t>(l)] : nullptr),
                     c_.dropout);
    x = c_.residual && spec.out() == dim ? add(y, x) : y;
    dim = spec.out();
    const auto site = moe_sites_.find(l);
    if (site == moe_sites_.end()) continue;
    x = add(
        dropout(sigmoid(site->second->build(b.layer(l, "moe"), x, FfnInput{FfnRole::lm, -1, Tensor()})), c_.dropout),
        x);
  }
  return x;
}

Expr LstmLm::output_param(const Builder& b) const {
  if (c_.tie_embeddings)
    return b.param("embed.tokens", Shape{c_.vocab, c_.embed_dim}, Init::normal(0, std::pow(c_.embed_dim, -0.5)));
  return b.param("out.w", Shape{c_.vocab, c_.out_dim()}, Init::glorot_uniform());
}

Expr LstmLm::output_weight(const Builder& b) const {
  return c_.adaptive_softmax_cutoffs.empty() ? output_param(b) : Expr();
}

Expr LstmLm::output_matrix(const Builder& b) const { return cast(output_param(b), b.dtype()); }

AdaptiveSoftmaxWeights LstmLm::softmax_weights(const Builder& b) const {
  return adaptive_softmax_weights(b.sub("adaptive_softmax"), b.sub("adaptive_input"), softmax_spec(), {});
}

Expr LstmLm::loss(const Builder& b, const Tensor& input, const Tensor& target, const Tensor& mask,
                  float label_smoothing) const {
  MOE_CHECK(target.shape() == input.shape(), "lstm_lm: targets ", target.shape(), " do not match inputs ",
            input.shape());
  MOE_CHECK(!mask.defined() || mask.numel() == input.numel(), "lstm_lm: mask ", mask.shape(), " for inputs ",
            input.shape());
  const int64_t n = input.numel();
  Expr rows = reshape(hidden(b, input), Shape{n, c_.out_dim()});
  const Tensor flat_target = target.view(Shape{n});
  const Tensor flat_mask = mask.defined() ? mask.view(Shape{n}) : Tensor();
  if (!c_.adaptive_softmax_cutoffs.empty())
    return adaptive_softmax_loss(softmax_weights(b), softmax_spec(), rows, flat_target, flat_mask, label_smoothing,
                                 c_.adaptive_softmax_dropout);
  Expr ce;
  if (b.training() && c_.sampled_softmax > 0) {
    MOE_CHECK(label_smoothing == 0, "model.sampled_softmax: train with train.label_smoothing 0, not ", label_smoothing);
    Graph& g = b.graph();
    ce = sampled_softmax_loss(b, rows, output_param(b), flat_target,
                              draw_log_uniform(c_.vocab, c_.sampled_softmax, g.seed(), g.next_rng_stream()));
  } else {
    ce = cross_entropy(matmul(rows, output_matrix(b), false, true), b.graph().input(flat_target), label_smoothing, -1);
  }
  if (flat_mask.defined()) {
    const Tensor m = flat_mask.dtype() == ce.dtype()
                         ? flat_mask
                         : Tensor::from_vector(flat_mask.to_vector<double>(), Shape{n}, Device::cpu(), ce.dtype());
    ce = mul(ce, b.graph().input(m));
  }
  return sum_all(ce);
}

Expr LstmLm::lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const {
  b.context().target_tokens = batch.tokens;  // aux losses (MoA) normalise against it
  return loss(b, batch.input, batch.target, batch.weights.defined() ? batch.weights : batch.mask, label_smoothing);
}

Expr LstmLm::output_log_probs(const Builder& b, const Expr& rows, const Tensor& weight_rows) const {
  if (!c_.adaptive_softmax_cutoffs.empty()) return adaptive_log_probs(softmax_weights(b), softmax_spec(), rows);
  const DType out = rows.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Expr w = weight_rows.defined() ? b.graph().input(weight_rows) : output_matrix(b);
  return log_softmax(cast(matmul(rows, w, false, true), out));
}

Expr LstmLm::log_probs(const Builder& b, const Tensor& input) const {
  return output_log_probs(b, reshape(hidden(b, input), Shape{input.numel(), c_.out_dim()}));
}

DecoderSpec LstmLm::spec() const {
  return {.pad_id = c_.pad_id, .bos_id = c_.bos_id, .eos_id = c_.eos_id, .max_positions = INT64_MAX, .vocab = c_.vocab};
}

std::unique_ptr<DecoderState> LstmLm::start(const Builder&, const Tensor&, const Tensor&) const {
  auto st = std::make_unique<State>();
  st->layers.resize(static_cast<size_t>(c_.layers));
  return st;
}

Expr LstmLm::step(const Builder& b, DecoderState& state, const Tensor& prev) const {
  State& st = dynamic_cast<State&>(state);
  MOE_CHECK(!b.training(), "LstmLm::step: incremental decoding runs in inference graphs");
  const int64_t n = prev.numel();
  const bool first = !st.layers.front().h.defined();  // no recurrent state yet
  Expr h = hidden(b, lm_step_tokens(prev, first, c_.eos_id).view(Shape{n, 1}), &st.layers);
  return output_log_probs(b, reshape(h, Shape{n, c_.out_dim()}), st.output_rows);
}

void LstmLm::State::reorder(const Builder& b, const Tensor& origin) {
  Expr idx = b.graph().input(origin);
  for (LstmState& s : layers) {
    if (s.h.defined()) s.h = index_select(s.h, idx);
    if (s.c.defined()) s.c = index_select(s.c, idx);
  }
}

}  // namespace moe
