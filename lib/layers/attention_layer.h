// Multi-head attention as a layer: q/k/v projections, the fused scaled-dot-product attention op
// (lib/ops/attention.h) and the output projection, with the decoding caches of kv_cache.h.
//   heads(x) = reshape(x W + b, [B, T, H, D/H]);  out = concat_h softmax(q k^T / sqrt(dh)) v  W_o + b_o
// An optional per-(sequence, head) or per-(position, head) weight multiplies each head's output
// before W_o (mixture of attentive experts builds on that). Covered by tests/layers/transformer_test.cpp
// and tests/layers/mae_test.cpp (cache state of gated sites).
#pragma once
#include <functional>

#include "layers/builder.h"
#include "layers/kv_cache.h"

namespace moe {

struct AttentionInput {
  Expr x{};              // queries come from x [B, Tq, d]
  Expr memory{};         // keys/values come from memory [B, Tk, d] (x itself for self-attention)
  Tensor key_padding{};  // optional u8 [B, Tk]: 1 = real token, 0 = padding
  bool causal = false;
  bool self_attention = true;
  KVCache* cache = nullptr;  // decoding: self-attention appends to it, cross-attention fills it once
  Tensor query_padding{};    // optional u8 [B, Tq]: 1 = real query (gates that average the queries skip padding)
  Expr source_mean{};        // optional [B, d]: encoder output averaged over real source tokens (decoder gates)
  float dropout = 0;         // attention dropout on the weights (model.attention_dropout; training graphs only)
  /// Optional: the site sets it to its first head's attention weights [B, Tq, Tk] (f32; f64 in f64 graphs), the
  /// alignment head of word alignments (translator/alignment.h). Teacher-forced graphs only (no cache).
  Expr* first_head = nullptr;
};

/// Keys and values [B, Tk, Hk, dh] through the cache of `in`: a filled cross-attention cache gives its own (one
/// per sentence, with its row table once hypotheses were reordered) and `project` is not called; otherwise project()
/// gives this step's, which self-attention appends to the cache (giving the cache's storage and its row table,
/// key_rows) and a cross-attention cache keeps. Without a cache, project()'s.
struct KeysValues {
  Expr k, v;
  Tensor key_rows{};  // a decoding cache's row table (kv_cache.h), for attention()
};
KeysValues cached_kv(Graph& g, const AttentionInput& in, const std::function<KeysValues()>& project);

/// q, k, v for `in` (with the cache applied): q [B, Tq, H, dh], k/v [B, Tk, Hk, dh].
struct Heads {
  Expr q, k, v;
  Tensor key_rows{};  // as KeysValues
};
Heads project_heads(const Builder& b, const AttentionInput& in, int64_t dim, int heads, int kv_heads);

/// softmax(q_0 k_0^T scale) over the keys of head 0 of q [B, Tq, H, dh] and k [B, Tk, Hk, dh], with `in`'s key
/// padding and causality, stored in *in.first_head when it is set (else nothing is computed).
void record_first_head(const AttentionInput& in, const Expr& q, const Expr& k, float scale);

/// Standard multi-head attention; `head_weight` optional ([B, H] or [B, Tq, H]).
Expr multi_head_attention(const Builder& b, const AttentionInput& in, int64_t dim, int heads,
                          const Expr& head_weight = Expr());

/// The output half: fused attention over `h`, optional head weights, output projection.
Expr attend_and_project(const Builder& b, const AttentionInput& in, const Heads& h, int64_t dim,
                        const Expr& head_weight = Expr());

}  // namespace moe
