// transformer.h implementation.
#include "models/transformer.h"

#include <cmath>
#include <numeric>

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
#include "layers/basic.h"
#include "layers/mae_gate_input.h"
#include "models/encode_by_length.h"
#include "models/target_loss.h"

namespace moe {

Expr Transformer::embed(const Builder& b, const std::string& table, int64_t vocab, const Tensor& ids,
                        int64_t offset) const {
  const int64_t t = ids.shape()[1];
  MOE_CHECK(offset + t <= c_.max_positions, "sequence of ", offset + t,
            " tokens exceeds model.max_positions = ", c_.max_positions);
  Expr e_table = b.graph().param(table, Shape{vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
  const float scale = c_.scale_embeddings ? std::sqrt(static_cast<float>(c_.d_model)) : 1.f;
  Expr x = embedding(e_table, ids, scale, b.dtype());
  Expr pos = b.graph().input(sinusoidal_positions(t, c_.d_model, offset, b.dtype(), b.graph().device()));
  return dropout(add(x, pos), c_.dropout);
}

Transformer::Transformer(TransformerConfig config)
    : c_(std::move(config)),
      attention_(SiteRegistry::instance().attention(c_.attention, {c_.d_model, c_.heads})),
      ffn_(SiteRegistry::instance().ffn(c_.ffn, {c_.d_model, c_.ffn_dim, c_.activation, c_.activation_dropout})) {
  // The routed sites, each checked where it sits: a decoder must not route by later target tokens at inference.
  const std::string model = "model.type transformer";
  for (const auto& [stack, layers, role] : {std::tuple{std::string("encoder"), c_.enc_layers, FfnRole::encoder},
                                            std::tuple{std::string("decoder"), c_.dec_layers, FfnRole::decoder}})
    for (int l = 0; l < layers; ++l) {
      const std::string at = stack + ".l" + std::to_string(l) + ".";
      const std::vector<std::pair<SiteRole, const char*>> attention =
          role == FfnRole::encoder
              ? std::vector<std::pair<SiteRole, const char*>>{{SiteRole::encoder_self, "self_attn"}}
              : std::vector<std::pair<SiteRole, const char*>>{{SiteRole::decoder_self, "self_attn"},
                                                              {SiteRole::decoder_cross, "cross_attn"}};
      for (const auto& [r, name] : attention)
        if (const std::optional<RoutedSite> s = attention_->routed(r))
          routed_.push_back(ModelRoutedSite{at + name, "model.attention", role, *s});
      add_routed_ffn(routed_, *ffn_, role, l, at + "ffn", "model.ffn", model);
    }
}

DecoderSpec Transformer::spec() const {
  return {.pad_id = c_.pad_id,
          .bos_id = c_.bos_id,
          .eos_id = c_.eos_id,
          .max_positions = c_.max_positions,
          .vocab = c_.tgt_vocab};
}

std::vector<std::string> Transformer::future_sites() const {
  std::vector<std::string> out;
  for (SiteRole r : attention_->sees_future({SiteRole::decoder_self, SiteRole::decoder_cross}))
    out.push_back(enum_name(r));
  return out;
}

Expr Transformer::ffn_block(const Builder& b, const Expr& x, const FfnInput& in, const Tensor& rows) const {
  const Builder ffn = b.sub("ffn");
  auto f = [&](const Expr& h) { return ffn_->build(ffn, h, in); };
  if (rows.defined() && ffn_->position_wise())
    return residual_block_rows(ffn, x, b.graph().input(rows), c_.d_model, c_.pre_norm, c_.dropout, f);
  return residual_block(ffn, x, c_.d_model, c_.pre_norm, c_.dropout, f);
}

Expr Transformer::encoder_layer(const Builder& b, Expr x, const Tensor& src_mask, int layer, const Tensor& rows) const {
  x = residual_block(b.sub("self_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{h, h, src_mask, false, true, nullptr, src_mask, Expr(), c_.attention_dropout};
    return attention_->build(b.sub("self_attn"), in, SiteRole::encoder_self);
  });
  return ffn_block(b, x, FfnInput{FfnRole::encoder, layer, src_mask}, rows);
}

Expr Transformer::encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  return encode_rows(b, src, src_mask, Tensor());
}

Expr Transformer::encode_rows(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& rows) const {
  Expr x = embed(b, src_table(), c_.src_vocab, src, 0);
  const Builder enc = b.sub("encoder");
  for (int l = 0; l < c_.enc_layers; ++l) x = encoder_layer(enc.layer(l), x, src_mask, l, rows);
  if (c_.pre_norm) x = layer_norm_layer(enc.sub("final_ln"), x, c_.d_model);
  return x;
}

Transformer::GateContext Transformer::gate_context(const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                                                   const Tensor& tgt_mask) const {
  GateContext ctx;
  ctx.tgt_padding = tgt_mask;  // gates that average the queries read it; the gate recorder reports it
  for (SiteRole role : {SiteRole::decoder_self, SiteRole::decoder_cross}) {
    const SiteInputs needs = attention_->inputs(role);
    if (needs.query_padding && tgt_in.defined() && !ctx.tgt_padding.defined())
      ctx.tgt_padding = padding_mask(tgt_in, c_.pad_id);
    if (needs.source_mean && !ctx.source_mean.defined())
      ctx.source_mean = sequence_mean(cast(memory, memory.dtype() == DType::f64 ? DType::f64 : DType::f32), src_mask);
  }
  return ctx;
}

Expr Transformer::decoder_layer(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask,
                                KVCache* self_cache, KVCache* cross_cache, const GateContext& gates, int layer) const {
  x = residual_block(b.sub("self_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{
        h, h, Tensor(), true, true, self_cache, gates.tgt_padding, gates.source_mean, c_.attention_dropout};
    return attention_->build(b.sub("self_attn"), in, SiteRole::decoder_self);
  });
  x = residual_block(b.sub("cross_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{
        h, memory, src_mask, false, false, cross_cache, gates.tgt_padding, gates.source_mean, c_.attention_dropout};
    if (layer == c_.dec_layers - 1) in.first_head = gates.alignment;
    return attention_->build(b.sub("cross_attn"), in, SiteRole::decoder_cross);
  });
  return ffn_block(b, x, FfnInput{FfnRole::decoder, layer, gates.tgt_padding}, gates.rows);
}

Expr Transformer::decoder_stack(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask, State* state,
                                const GateContext& gates) const {
  const Builder dec = b.sub("decoder");
  for (int l = 0; l < c_.dec_layers; ++l) {
    KVCache* self_cache = state ? &state->self[static_cast<size_t>(l)] : nullptr;
    KVCache* cross_cache = state ? &state->cross[static_cast<size_t>(l)] : nullptr;
    x = decoder_layer(dec.layer(l), x, memory, src_mask, self_cache, cross_cache, gates, l);
  }
  if (c_.pre_norm) x = layer_norm_layer(dec.sub("final_ln"), x, c_.d_model);
  return x;
}

Expr Transformer::output_weight(const Builder& b) const {
  const std::string table = c_.tie_embeddings == TieEmbeddings::none ? "out.w" : tgt_table();
  return b.graph().param(table, Shape{c_.tgt_vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
}

Expr Transformer::output_logits(const Builder& b, const Expr& h, const Tensor& weight_rows) const {
  const Shape& s = h.shape();
  Expr rows = s.ndim() == 2 ? h : reshape(h, Shape{s[0] * s[1], s[2]});
  Expr w = weight_rows.defined() ? b.graph().input(weight_rows) : cast(output_weight(b), b.dtype());
  return matmul(rows, w, false, true);
}

Expr Transformer::decoder_states(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                                 const Tensor& tgt_mask, const Tensor& rows) const {
  Expr y = embed(b, tgt_table(), c_.tgt_vocab, tgt_in, 0);
  GateContext gates = gate_context(memory, src_mask, tgt_in, tgt_mask);
  gates.rows = rows;
  gates.alignment = b.context().alignment;  // guided-alignment training reads the alignment head
  return decoder_stack(b, y, memory, src_mask, nullptr, gates);
}

Expr Transformer::decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                         const Tensor& tgt_mask) const {
  return output_logits(b, decoder_states(b, memory, src_mask, tgt_in, tgt_mask));
}

Expr Transformer::alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const {
  const Expr memory = encode(b, src, src_mask);
  GateContext gates = gate_context(memory, src_mask, tgt_in, Tensor());
  Expr weights;
  gates.alignment = &weights;
  decoder_stack(b, embed(b, tgt_table(), c_.tgt_vocab, tgt_in, 0), memory, src_mask, nullptr, gates);
  return cast(weights, DType::f32);
}

Expr Transformer::loss(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in,
                       const Tensor& tgt_out, float label_smoothing, const Tensor& tgt_mask, const RealPositions& real,
                       const Tensor& tgt_weights) const {
  Expr memory = encode_rows(b, src, src_mask, real.src_rows);
  Expr h = decoder_states(b, memory, src_mask, tgt_in, tgt_mask, real.tgt_rows);
  Expr targets;
  if (real.tgt_rows.defined()) {  // the real targets only: the output layer's three GEMMs and the loss skip the padding
    const Shape& s = h.shape();
    h = index_select(reshape(h, Shape{s[0] * s[1], s[2]}), b.graph().input(real.tgt_rows));
    targets = b.graph().input(real.tgt_labels);
  } else {
    targets = b.graph().input(tgt_out.view(Shape{tgt_out.numel()}));
  }
  return summed_target_loss(b, cross_entropy(output_logits(b, h), targets, label_smoothing, c_.pad_id), tgt_weights,
                            real.tgt_rows);
}

std::unique_ptr<DecoderState> Transformer::start(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  MOE_CHECK(!b.training(), "Transformer::start: decoding runs in inference graphs");
  auto st = std::make_unique<State>();
  st->self.resize(static_cast<size_t>(c_.dec_layers));
  st->cross.resize(static_cast<size_t>(c_.dec_layers));
  st->src_mask = src_mask;
  st->sentence.resize(static_cast<size_t>(src.shape()[0]));
  std::iota(st->sentence.begin(), st->sentence.end(), 0);
  Expr memory = encode_by_length(b, src, src_mask, [&](const Tensor& s, const Tensor& m) { return encode(b, s, m); });
  const Expr source_mean = gate_context(memory, src_mask, Tensor(), Tensor()).source_mean;
  if (source_mean.defined()) st->source_mean = source_mean.val();
  // Fill the cross-attention caches by projecting the memory once per layer.
  const Builder dec = b.sub("decoder");
  for (int l = 0; l < c_.dec_layers; ++l)
    attention_->fill_cross_cache(dec.layer(l).sub("cross_attn"), memory, src_mask, st->cross[static_cast<size_t>(l)]);
  return st;
}

Expr Transformer::step(const Builder& b, DecoderState& state, const Tensor& prev) const {
  return log_softmax(step_logits(b, state, prev));
}

Expr Transformer::step_logits(const Builder& b, DecoderState& state, const Tensor& prev) const {
  State& st = dynamic_cast<State&>(state);
  const int64_t n = prev.numel();
  Expr y = embed(b, tgt_table(), c_.tgt_vocab, prev.view(Shape{n, 1}), st.step);
  GateContext gates;
  if (st.source_mean.defined()) gates.source_mean = b.graph().input(st.source_mean);
  Expr h = decoder_stack(b, y, Expr(), st.src_mask, &st, gates);
  ++st.step;
  return cast(output_logits(b, h, st.output_rows), DType::f32);
}

void Transformer::State::reorder(const Builder&, const Tensor& origin) {
  for (KVCache& c : self) reorder_cache(c, origin);
  const std::vector<int32_t> from = origin.to_vector<int32_t>();
  std::vector<int32_t> now(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    MOE_CHECK(from[i] >= 0 && static_cast<size_t>(from[i]) < sentence.size(), "Transformer decoding: origin row ",
              from[i], " is outside the ", sentence.size(), " hypotheses");
    now[i] = sentence[static_cast<size_t>(from[i])];
  }
  const bool same_sentences = now == sentence;
  sentence = std::move(now);
  for (KVCache& c : cross) same_sentences ? reorder_cache_rows(c, origin) : reorder_cache(c, origin);
  if (same_sentences) return;
  src_mask = select_rows(src_mask, origin);
  source_mean = select_rows(source_mean, origin);
}

}  // namespace moe
