// Expression operator for fused scaled dot-product attention (graph node over lib/ops/attention.h).
// out [B,Tq,H,D] = head_weight * softmax(scale * q k^T, masked) v, with gradients for q, k, v and
// head_weight; attention dropout in training graphs (keys drawn per (seed, step, node), attention_dropout.h).
// Covered by tests/ops/attention_test.cpp, attention_dropout_test.cpp and tests/gpu/attention_parity_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/attention.h"

namespace moe {

/// q [B,Tq,H,D], k and v [B,Tk,Hk,D] (H % Hk == 0). key_padding: u8 [B,Tk] (1 = real key) or an
/// undefined Tensor; it is moved to the graph's device when needed. causal: query i sees keys
/// j <= i + (Tk - Tq). head_weight: an Expr [B,H] or [B,Tq,H], or undefined for none. dropout: the
/// rate of attention dropout, applied in training graphs only. key_rows: a decoding cache's row table (i32 [B,Tk];
/// k and v are then the cache's [R,C,Hk,D] storage: lib/ops/attention.h), inference only (no backward).
Expr attention(const Expr& q, const Expr& k, const Expr& v, const Tensor& key_padding, bool causal, float scale,
               const Expr& head_weight = {}, float dropout = 0.f, const Tensor& key_rows = Tensor());

}  // namespace moe
