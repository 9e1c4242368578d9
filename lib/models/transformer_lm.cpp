// transformer_lm.h implementation.
#include "models/transformer_lm.h"

#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/cross_entropy.h"
#include "graph/expr/dropout.h"
#include "graph/expr/embedding.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "layers/basic.h"
#include "layers/sites.h"

namespace moe {

namespace {

/// `mask` as a [n] tensor of `dtype` (a host conversion only when its dtype differs).
Tensor mask_as(const Tensor& mask, int64_t n, DType dtype) {
  MOE_CHECK(mask.numel() == n, "transformer_lm: mask ", mask.shape(), " does not match ", n, " targets");
  if (mask.dtype() == dtype) return mask.view(Shape{n});
  return Tensor::from_vector(mask.to_vector<double>(), Shape{n}, Device::cpu(), dtype);
}
}  // namespace

TransformerLm::TransformerLm(TransformerLmConfig config)
    : c_(std::move(config)),
      attention_(SiteRegistry::instance().attention(c_.attention, {c_.d_model, c_.heads})),
      ffn_(SiteRegistry::instance().ffn(c_.ffn, {c_.d_model, c_.ffn_dim, c_.activation, c_.activation_dropout})) {
  MOE_CHECK(c_.vocab > 0, "transformer_lm: model.vocab is ", c_.vocab, " (it is filled from the vocabulary)");
  if (c_.adaptive_input()) input_spec().validate("model.adaptive_input_cutoffs");
  if (c_.adaptive_softmax()) softmax_spec().validate("model.adaptive_softmax_cutoffs");
  // The routed sites; a causal LM refuses a routing that sees later tokens (check_routing).
  for (int l = 0; l < c_.layers; ++l) {
    const std::string at = "decoder.l" + std::to_string(l) + ".";
    if (const std::optional<RoutedSite> s = attention_->routed(role()))
      routed_.push_back(ModelRoutedSite{at + "self_attn", "model.attention", ffn_role(), *s});
    add_routed_ffn(routed_, *ffn_, ffn_role(), l, at + "ffn", "model.ffn", "model.type " + type());
  }
}

AdaptiveSpec TransformerLm::input_spec() const {
  return AdaptiveSpec{c_.vocab, c_.d_model, c_.adaptive_input_cutoffs, c_.adaptive_input_factor};
}

AdaptiveSpec TransformerLm::softmax_spec() const {
  return AdaptiveSpec{c_.vocab, c_.d_model, c_.adaptive_softmax_cutoffs, c_.adaptive_softmax_factor};
}

Expr TransformerLm::embed(const Builder& b, const Tensor& input, int64_t offset) const {
  MOE_CHECK(input.shape().ndim() == 2 && input.dtype() == DType::i32, "transformer_lm: input must be i32 [B, T], not ",
            dtype_name(input.dtype()), " ", input.shape());
  const int64_t t = input.shape()[1];
  MOE_CHECK(offset + t <= c_.max_positions, "transformer_lm: sequence of ", offset + t,
            " tokens exceeds model.max_positions = ", c_.max_positions);
  const float scale = c_.scale_embeddings ? std::sqrt(static_cast<float>(c_.d_model)) : 1.f;
  Expr x;
  if (c_.adaptive_input()) {
    x = adaptive_input(b.sub("adaptive_input"), input_spec(), input, scale);
  } else {
    Expr table = b.param("embed.tokens", Shape{c_.vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
    x = embedding(table, input, scale, b.dtype());
  }
  Graph& g = b.graph();
  if (c_.positions == Positions::sinusoidal) {
    x = add(x, g.input(sinusoidal_positions(t, c_.d_model, offset, b.dtype(), g.device())));
  } else if (c_.positions == Positions::learned) {
    std::vector<int32_t> pos(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(offset + i);
    Expr table =
        b.param("embed.positions", Shape{c_.max_positions, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
    x = add(x, embedding(table, Tensor::from_vector(pos, Shape{t}), 1.f, b.dtype()));
  }
  return dropout(x, c_.dropout);
}

Expr TransformerLm::layer(const Builder& b, Expr x, const Tensor& key_padding, const Tensor& query_padding,
                          KVCache* cache, int index) const {
  x = residual_block(b.sub("self_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{h, h, key_padding, c_.causal, true, cache, query_padding, Expr(), c_.attention_dropout};
    return attention_->build(b.sub("self_attn"), in, role());
  });
  return residual_block(b.sub("ffn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    return ffn_->build(b.sub("ffn"), h, FfnInput{ffn_role(), index, key_padding});
  });
}

Expr TransformerLm::hidden(const Builder& b, const Tensor& input, std::vector<KVCache>* caches, int64_t offset) const {
  Expr x = embed(b, input, offset);
  // Causal models need no key padding: padding only ever follows the real tokens of a row.
  const Tensor key_padding = c_.causal ? Tensor() : padding_mask(input, c_.pad_id);
  // Gates that average the queries (MAE full_mean) read the real positions (the causal ones need none).
  const bool gate_padding = c_.causal && !caches && attention_->inputs(role()).query_padding;
  const Tensor query_padding = gate_padding ? padding_mask(input, c_.pad_id) : key_padding;
  const Builder dec = b.sub("decoder");
  for (int l = 0; l < c_.layers; ++l)
    x = layer(dec.layer(l), x, key_padding, query_padding, caches ? &(*caches)[static_cast<size_t>(l)] : nullptr, l);
  if (c_.final_norm) x = layer_norm_layer(dec.sub("final_ln"), x, c_.d_model);
  return x;
}

Expr TransformerLm::output_weight(const Builder& b) const {
  if (c_.adaptive_softmax()) return {};
  const Init init = Init::normal(0, std::pow(c_.d_model, -0.5));
  return b.param(c_.tie_embeddings ? "embed.tokens" : "out.w", Shape{c_.vocab, c_.d_model}, init);
}

Expr TransformerLm::output_matrix(const Builder& b) const { return cast(output_weight(b), b.dtype()); }

AdaptiveSoftmaxWeights TransformerLm::softmax_weights(const Builder& b) const {
  const AdaptiveSoftmaxOptions opt{c_.tie_embeddings, c_.tie_embeddings && c_.tie_adaptive_proj};
  return adaptive_softmax_weights(b.sub("adaptive_softmax"), b.sub("adaptive_input"), softmax_spec(), opt);
}

Expr TransformerLm::loss(const Builder& b, const Tensor& input, const Tensor& target, const Tensor& mask,
                         float label_smoothing) const {
  MOE_CHECK(target.shape() == input.shape(), "transformer_lm: targets ", target.shape(), " do not match inputs ",
            input.shape());
  const int64_t n = input.numel();
  Expr rows = reshape(hidden(b, input), Shape{n, c_.d_model});
  Tensor flat_target = target.view(Shape{n});
  if (c_.adaptive_softmax())
    return adaptive_softmax_loss(softmax_weights(b), softmax_spec(), rows, flat_target,
                                 mask.defined() ? mask.view(Shape{n}) : Tensor(), label_smoothing,
                                 c_.adaptive_softmax_dropout);
  Expr logits = matmul(rows, output_matrix(b), false, true);
  Expr ce = cross_entropy(logits, b.graph().input(flat_target), label_smoothing, -1);
  if (mask.defined()) ce = mul(ce, b.graph().input(mask_as(mask, n, ce.dtype())));
  return sum_all(ce);
}

Expr TransformerLm::lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const {
  b.context().target_tokens = batch.tokens;  // aux losses (MoA) normalise against it
  return loss(b, batch.input, batch.target, batch.weights.defined() ? batch.weights : batch.mask, label_smoothing);
}

Expr TransformerLm::output_log_probs(const Builder& b, const Expr& rows, const Tensor& weight_rows) const {
  if (c_.adaptive_softmax()) return adaptive_log_probs(softmax_weights(b), softmax_spec(), rows);
  const DType out = rows.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Expr w = weight_rows.defined() ? b.graph().input(weight_rows) : output_matrix(b);
  return log_softmax(cast(matmul(rows, w, false, true), out));
}

Expr TransformerLm::log_probs(const Builder& b, const Tensor& input) const {
  return output_log_probs(b, reshape(hidden(b, input), Shape{input.numel(), c_.d_model}));
}

DecoderSpec TransformerLm::spec() const {
  return {.pad_id = c_.pad_id,
          .bos_id = c_.bos_id,
          .eos_id = c_.eos_id,
          .max_positions = c_.max_positions,
          .vocab = c_.vocab};
}

std::vector<std::string> TransformerLm::future_sites() const {
  std::vector<std::string> out;
  if (c_.causal)
    for (SiteRole r : attention_->sees_future({SiteRole::lm_self})) out.push_back(enum_name(r));
  return out;
}

std::unique_ptr<DecoderState> TransformerLm::start(const Builder&, const Tensor&, const Tensor&) const {
  auto st = std::make_unique<State>();
  st->caches.resize(static_cast<size_t>(c_.layers));
  return st;
}

Expr TransformerLm::step(const Builder& b, DecoderState& state, const Tensor& prev) const {
  State& st = dynamic_cast<State&>(state);
  MOE_CHECK(!b.training(), "TransformerLm::step: incremental decoding runs in inference graphs");
  MOE_CHECK(c_.causal, "TransformerLm::step: a bidirectional transformer_mlm has no incremental decoding");
  MOE_CHECK(static_cast<int>(st.caches.size()) == c_.layers, "TransformerLm::step: state has ", st.caches.size(),
            " layer caches for ", c_.layers, " layers (use start())");
  const int64_t n = prev.numel();
  Expr h = hidden(b, lm_step_tokens(prev, st.step == 0, c_.eos_id).view(Shape{n, 1}), &st.caches, st.step);
  ++st.step;
  return output_log_probs(b, reshape(h, Shape{n, c_.d_model}), st.output_rows);
}

void TransformerLm::State::reorder(const Builder&, const Tensor& origin) {
  for (KVCache& c : caches) reorder_cache(c, origin);
}

}  // namespace moe
