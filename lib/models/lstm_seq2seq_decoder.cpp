// lstm_seq2seq.h implementation, the decoder: one stack for teacher forcing (T steps, fresh recurrence)
// and incremental decoding (one step, the recurrence carried in the State). Layer 0's input weights
// W_x [2d, 4H] split into the rows of the embedding y_t (applied to all steps in one GEMM) and of the
// previous context a_t-1 (applied per step). Covered by tests/models/lstm_seq2seq_test.cpp.
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/dropout.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "layers/basic.h"
#include "models/lstm_seq2seq.h"

namespace moe {

AttentionMemory LstmSeq2seq::attention_memory_of(const Builder& b, const Expr& memory, const Tensor& src_mask) const {
  const AttentionWeights w =
      attention_weights(b.sub("decoder").sub("attention"), c_.d_model, c_.d_model, c_.attention_units());
  return attention_memory(memory, src_mask, w, c_.attention_function);
}

Expr LstmSeq2seq::decoder_stack(const Builder& b, const Expr& y, const AttentionMemory& memory, const Tensor& tgt_mask,
                                Recurrence& r, std::vector<Expr>* probs) const {
  const Shape s = y.shape();
  const int64_t B = s[0], T = s[1], d = c_.d_model;
  const Builder dec = b.sub("decoder");
  r.layers.resize(static_cast<size_t>(c_.dec_layers));
  // Layer 0 with input feeding, and the attention it queries, step by step.
  const LstmWeights w = lstm_weights(dec.layer(0).sub("lstm"), c_.lstm(2 * d));
  Expr w_context = slice(w.w_x, 0, d, d);
  Expr gates_y = linear(transpose(y, {1, 0, 2}), slice(w.w_x, 0, 0, d), w.bias);  // [T, B, 4H]
  const int64_t four_h = gates_y.shape()[2];
  std::vector<Expr> states, contexts;
  for (int64_t t = 0; t < T; ++t) {
    auto at = [&](const Expr& v, int axis, int64_t width) {
      return reshape(T == 1 ? v : slice(v, axis, t, 1), Shape{B, width});
    };
    Expr gates = at(gates_y, 0, four_h);
    if (r.context.defined()) gates = add(gates, matmul(r.context, w_context));
    r.layers[0] = lstm_cell(gates, r.layers[0], w.w_h, w.w_p);
    Expr z = add(dropout(r.layers[0].h, c_.dropout), at(y, 1, d));
    r.context = attention_context(memory, z, probs ? &probs->emplace_back() : nullptr);
    states.push_back(reshape(z, Shape{B, 1, d}));
    contexts.push_back(reshape(r.context, Shape{B, 1, d}));
  }
  Expr z = T == 1 ? states[0] : concat(states, 1);
  const Expr a = T == 1 ? contexts[0] : concat(contexts, 1);
  for (int l = 0; l < c_.dec_layers; ++l) {
    const Builder layer = dec.layer(l);
    if (l > 0) {
      Expr h = lstm_layer(layer.sub("lstm"), concat({z, a}, 2), c_.lstm(2 * d), &r.layers[static_cast<size_t>(l)]);
      z = add(dropout(h, c_.dropout), z);
    }
    if (const FfnSite* site = moe_after(c_.decoder_moe_after, l))
      z = moe_block(layer.sub("moe"), *site, z, tgt_mask, FfnRole::decoder);
  }
  return z;
}

Expr LstmSeq2seq::decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                         const Tensor& tgt_mask) const {
  const Tensor mask = tgt_mask.defined() ? tgt_mask : padding_mask(tgt_in, c_.pad_id);
  Recurrence r;
  std::vector<Expr> probs;  // guided-alignment training reads the attention (BuildContext::alignment)
  Expr* const alignment = b.context().alignment;
  Expr h = decoder_stack(b, embed(b, false, tgt_in), attention_memory_of(b, memory, src_mask), mask, r,
                         alignment ? &probs : nullptr);
  if (alignment)
    *alignment = stacked_weights(probs, tgt_in.shape()[0], src_mask.shape()[1],
                                 b.dtype() == DType::f64 ? DType::f64 : DType::f32);
  return output_logits(b, h);
}

Expr LstmSeq2seq::stacked_weights(std::vector<Expr>& probs, int64_t B, int64_t S, DType dtype) {
  for (Expr& p : probs) p = reshape(cast(p, dtype), Shape{B, 1, S});
  return probs.size() == 1 ? probs[0] : concat(probs, 1);
}

Expr LstmSeq2seq::alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const {
  Recurrence r;
  std::vector<Expr> probs;
  decoder_stack(b, embed(b, false, tgt_in), attention_memory_of(b, encode(b, src, src_mask), src_mask),
                padding_mask(tgt_in, c_.pad_id), r, &probs);
  return stacked_weights(probs, tgt_in.shape()[0], src.shape()[1], DType::f32);
}

DecoderSpec LstmSeq2seq::spec() const {
  return {.pad_id = c_.pad_id,
          .bos_id = c_.bos_id,
          .eos_id = c_.eos_id,
          .max_positions = c_.max_positions,
          .vocab = c_.tgt_vocab};
}

std::unique_ptr<DecoderState> LstmSeq2seq::start(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  MOE_CHECK(!b.training(), "LstmSeq2seq::start: decoding runs in inference graphs");
  auto st = std::make_unique<State>();
  st->memory = attention_memory_of(b, encode(b, src, src_mask), src_mask);
  return st;
}

Expr LstmSeq2seq::step(const Builder& b, DecoderState& state, const Tensor& prev) const {
  State& st = dynamic_cast<State&>(state);
  const int64_t n = prev.numel();
  Expr h = decoder_stack(b, embed(b, false, prev.view(Shape{n, 1})), st.memory, Tensor(), st.recurrence);
  return log_softmax(cast(output_logits(b, h, st.output_rows), DType::f32));
}

void LstmSeq2seq::State::reorder(const Builder& b, const Tensor& origin) {
  memory.reorder(origin);
  Expr idx = b.graph().input(origin);
  auto select = [&](Expr& e) {
    if (e.defined()) e = index_select(e, idx);
  };
  for (LstmState& s : recurrence.layers) {
    select(s.h);
    select(s.c);
  }
  select(recurrence.context);
}

}  // namespace moe
