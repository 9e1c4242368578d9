// A bidirectional LSTM layer over right-padded sequences (the bottom encoder layer of GNMT, Wu et al.
// 2016, and of the sparsely-gated MoE paper's translation models):
//   y = [ fw(x) ; R(bw(R(x))) ]
// where R reverses every row within its length (mask [B, S], 1 = token) and leaves the padding where
// it is, so the backward direction starts at the last real token, padding never reaches a real
// position, and a sentence's states do not depend on the batch it is padded in. Each direction has its
// own parameters (under "fw" and "bw") and `direction.out()` features; y has twice that.
// Covered by tests/models/lstm_seq2seq_layers_test.cpp (finite differences, padding independence).
#pragma once
#include "layers/lstm.h"

namespace moe {

/// i32 [B * S]: position b * S + t holds b * S + (len_b - 1 - t) for t < len_b, else itself; len_b is
/// the count of 1s in row b of `mask` (u8 [B, S], any device; undefined = every position real). The
/// permutation is its own inverse. On `device`.
Tensor reverse_within_length(const Tensor& mask, int64_t batch, int64_t len, Device device);

/// The layer on explicit weights: x [B, S, in] -> [B, S, 2 out].
Expr bidirectional_lstm(const Expr& x, const Tensor& mask, const LstmWeights& fw, const LstmWeights& bw);

/// The layer with its parameters under b.sub("fw") and b.sub("bw") (lstm_weights of `direction`).
Expr bidirectional_lstm_layer(const Builder& b, const Expr& x, const Tensor& mask, const LstmSpec& direction);

}  // namespace moe
