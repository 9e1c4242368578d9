// The attention between the LSTM encoder and decoder of lstm_seq2seq (Shazeer et al. 2017, App. G):
// a learned attention function A(x_i, y) of every source vector x_i and the decoder's query y gives
//   p = softmax_i A(x_i, y) over the real source positions,  context = sum_i p_i x_i.
// Two functions, with U [d_mem, n], W [d_query, n], V [n]:
//   shazeer (App. G, Eq. 22): A(x, y) = sum_d V_d tanh((x U)_d) tanh((y W)_d)
//                              = (tanh(y W) * V) . tanh(x U): one matmul over all source positions;
//   gnmt    (Wu et al. 2016, App. G Eq. 21): A(x, y) = sum_d V_d tanh((x U)_d + (y W)_d).
// The source side (tanh(x U), or x U) is computed once per sentence (attention_memory) and kept for
// every decoding step. Scores and the softmax run in f32 (f64 for f64 inputs).
// Covered by tests/models/lstm_seq2seq_layers_test.cpp (a hand-computed case, finite differences).
#pragma once
#include "common/named_enum.h"
#include "layers/builder.h"

namespace moe {

MOE_NAMED_ENUM(AttentionFunction, shazeer, gnmt)

struct AttentionWeights {
  Expr u, w, v;  // [d_mem, n], [d_query, n], [n]
};
/// Parameters "u", "w" (Glorot-uniform) and "v" (normal, std n^-1/2) under b, in the compute dtype.
AttentionWeights attention_weights(const Builder& b, int64_t memory_dim, int64_t query_dim, int64_t n);

/// The source side of an attention: values [B, S, d_mem], keys [B, S, n] and the padding mask, with the
/// weights and function that made the keys (the queries use them too).
struct AttentionMemory {
  Expr values, keys;
  Tensor mask;  // u8 [B, S], 1 = token; undefined: every position is real
  AttentionWeights weights;
  AttentionFunction function = AttentionFunction::shazeer;
  /// Decoding: row i becomes row origin[i] (i32 [N'], on the graph's device).
  void reorder(const Tensor& origin);
};
AttentionMemory attention_memory(const Expr& memory, const Tensor& mask, const AttentionWeights& w,
                                 AttentionFunction f);

/// Attention probabilities [B, S] (f32, or f64 for f64 inputs) for queries [B, d_query].
Expr attention_probs(const AttentionMemory& m, const Expr& query);
/// The context sum_i p_i x_i, [B, d_mem] in the values' dtype; `probs` (optional) receives attention_probs.
Expr attention_context(const AttentionMemory& m, const Expr& query, Expr* probs = nullptr);

}  // namespace moe
