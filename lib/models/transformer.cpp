// transformer.h implementation.
#include "models/transformer.h"

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
#include "layers/mae.h"
#include "layers/mae_gate_input.h"
#include "layers/moa.h"
#include "layers/sites.h"

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

Expr Transformer::encoder_layer(const Builder& b, Expr x, const Tensor& src_mask) const {
  const AttentionSiteSpec att{c_.d_model, c_.heads, c_.attention, kEncoderSelf};
  x = residual_block(b.sub("self_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{h, h, src_mask, false, true, nullptr, src_mask, Expr()};
    return attention_site(b.sub("self_attn"), in, att);
  });
  const FfnSiteSpec ffn{c_.d_model, c_.ffn_dim, c_.activation, c_.activation_dropout, c_.ffn};
  return residual_block(b.sub("ffn"), x, c_.d_model, c_.pre_norm, c_.dropout,
                        [&](const Expr& h) { return ffn_site(b.sub("ffn"), h, ffn); });
}

Expr Transformer::encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  Expr x = embed(b, src_table(), c_.src_vocab, src, 0);
  const Builder enc = b.sub("encoder");
  for (int l = 0; l < c_.enc_layers; ++l) x = encoder_layer(enc.layer(l), x, src_mask);
  if (c_.pre_norm) x = layer_norm_layer(enc.sub("final_ln"), x, c_.d_model);
  return x;
}

Transformer::GateContext Transformer::gate_context(const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                                                   const Tensor& tgt_mask) const {
  GateContext ctx;
  if (c_.attention_type() != "mae") return ctx;
  const MaeOptions o = MaeOptions::from_yaml(c_.attention, c_.heads);
  ctx.tgt_padding = tgt_mask;  // full_mean gates need it; the gate recorder reports it
  for (const char* role : {kDecoderSelf, kDecoderCross}) {
    if (o.policy(role) == "full_mean" && tgt_in.defined() && !ctx.tgt_padding.defined())
      ctx.tgt_padding = padding_mask(tgt_in, c_.pad_id);
    if (o.policy(role) == "source_mean" && !ctx.source_mean.defined())
      ctx.source_mean = sequence_mean(cast(memory, memory.dtype() == DType::f64 ? DType::f64 : DType::f32), src_mask);
  }
  return ctx;
}

Expr Transformer::decoder_layer(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask,
                                KVCache* self_cache, KVCache* cross_cache, const GateContext& gates) const {
  const AttentionSiteSpec self_att{c_.d_model, c_.heads, c_.attention, kDecoderSelf};
  x = residual_block(b.sub("self_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{h, h, Tensor(), true, true, self_cache, gates.tgt_padding, gates.source_mean};
    return attention_site(b.sub("self_attn"), in, self_att);
  });
  const AttentionSiteSpec cross_att{c_.d_model, c_.heads, c_.attention, kDecoderCross};
  x = residual_block(b.sub("cross_attn"), x, c_.d_model, c_.pre_norm, c_.dropout, [&](const Expr& h) {
    AttentionInput in{h, memory, src_mask, false, false, cross_cache, gates.tgt_padding, gates.source_mean};
    return attention_site(b.sub("cross_attn"), in, cross_att);
  });
  const FfnSiteSpec ffn{c_.d_model, c_.ffn_dim, c_.activation, c_.activation_dropout, c_.ffn};
  return residual_block(b.sub("ffn"), x, c_.d_model, c_.pre_norm, c_.dropout,
                        [&](const Expr& h) { return ffn_site(b.sub("ffn"), h, ffn); });
}

Expr Transformer::decoder_stack(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask,
                                DecoderState* state, const GateContext& gates) const {
  const Builder dec = b.sub("decoder");
  for (int l = 0; l < c_.dec_layers; ++l) {
    KVCache* self_cache = state ? &state->self[static_cast<size_t>(l)] : nullptr;
    KVCache* cross_cache = state ? &state->cross[static_cast<size_t>(l)] : nullptr;
    x = decoder_layer(dec.layer(l), x, memory, src_mask, self_cache, cross_cache, gates);
  }
  if (c_.pre_norm) x = layer_norm_layer(dec.sub("final_ln"), x, c_.d_model);
  return x;
}

Expr Transformer::output_logits(const Builder& b, const Expr& h) const {
  const Shape& s = h.shape();
  Expr rows = reshape(h, Shape{s[0] * s[1], s[2]});
  const std::string table = c_.tie_embeddings == "none" ? "out.w" : tgt_table();
  Expr w = cast(b.graph().param(table, Shape{c_.tgt_vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5))),
                b.dtype());
  return matmul(rows, w, false, true);
}

Expr Transformer::decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                         const Tensor& tgt_mask) const {
  Expr y = embed(b, tgt_table(), c_.tgt_vocab, tgt_in, 0);
  const GateContext gates = gate_context(memory, src_mask, tgt_in, tgt_mask);
  return output_logits(b, decoder_stack(b, y, memory, src_mask, nullptr, gates));
}

Expr Transformer::loss(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in,
                       const Tensor& tgt_out, float label_smoothing, const Tensor& tgt_mask) const {
  Expr memory = encode(b, src, src_mask);
  Expr logits = decode(b, memory, src_mask, tgt_in, tgt_mask);
  Expr targets = b.graph().input(tgt_out.view(Shape{tgt_out.numel()}));
  return sum_all(cross_entropy(logits, targets, label_smoothing, c_.pad_id));
}

Transformer::DecoderState Transformer::start(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  MOE_CHECK(!b.training(), "Transformer::start: decoding runs in inference graphs");
  DecoderState st;
  st.self.resize(static_cast<size_t>(c_.dec_layers));
  st.cross.resize(static_cast<size_t>(c_.dec_layers));
  st.src_mask = src_mask;
  Expr memory = encode(b, src, src_mask);
  const Expr source_mean = gate_context(memory, src_mask, Tensor(), Tensor()).source_mean;
  if (source_mean.defined()) st.source_mean = source_mean.val();
  // Fill the cross-attention caches by projecting the memory once per layer.
  const Builder dec = b.sub("decoder");
  for (int l = 0; l < c_.dec_layers; ++l) {
    const Builder cb = dec.layer(l).sub("cross_attn");
    if (c_.attention_type() == "moa") {  // one shared key/value head of width D
      moa_fill_cross_cache(cb, memory, c_.d_model, MoaOptions::from_yaml(c_.attention, c_.heads),
                           st.cross[static_cast<size_t>(l)]);
      continue;
    }
    AttentionInput in{memory, memory, src_mask, false, false, &st.cross[static_cast<size_t>(l)], Tensor(), Expr()};
    project_heads(cb, in, c_.d_model, c_.heads, c_.heads);
  }
  return st;
}

Expr Transformer::step(const Builder& b, DecoderState& st, const Tensor& prev) const {
  const int64_t n = prev.numel();
  Expr y = embed(b, tgt_table(), c_.tgt_vocab, prev.view(Shape{n, 1}), st.step);
  GateContext gates;
  if (st.source_mean.defined()) gates.source_mean = b.graph().input(st.source_mean);
  Expr h = decoder_stack(b, y, Expr(), st.src_mask, &st, gates);
  ++st.step;
  return log_softmax(cast(output_logits(b, h), DType::f32));
}

void Transformer::reorder(DecoderState& st, const Tensor& origin) {
  for (KVCache& c : st.self) reorder_cache(c, origin);
  for (KVCache& c : st.cross) reorder_cache(c, origin);
  st.src_mask = select_rows(st.src_mask, origin);
  st.source_mean = select_rows(st.source_mean, origin);
}

}  // namespace moe
