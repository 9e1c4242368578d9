// attention_layer.h implementation.
#include "layers/attention_layer.h"

#include <cmath>

#include "graph/expr/attention.h"
#include "graph/expr/cast.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "layers/basic.h"

namespace moe {

namespace {
Expr split_heads(const Expr& x, int heads) {
  const Shape& s = x.shape();
  return reshape(x, Shape{s[0], s[1], heads, s[2] / heads});
}
}  // namespace

KeysValues cached_kv(Graph& g, const AttentionInput& in, const std::function<KeysValues()>& project) {
  KVCache* cache = in.cache;
  if (cache && !in.self_attention && cache->defined()) {  // cross-attention: keys/values once per sentence
    apply_cross_order(*cache);
    return {g.input(cache->k), g.input(cache->v), cache->key_rows};
  }
  KeysValues kv = project();
  if (cache && in.self_attention) {
    append_to_cache(*cache, kv.k.val(), kv.v.val());
    return {g.input(cache->k), g.input(cache->v), cache->key_rows};
  }
  if (cache) {
    cache->k = kv.k.val();
    cache->v = kv.v.val();
  }
  return kv;
}

Heads project_heads(const Builder& b, const AttentionInput& in, int64_t dim, int heads, int kv_heads) {
  MOE_CHECK(dim % heads == 0, b.name("q"), ": model dimension ", dim, " is not divisible by ", heads, " heads");
  const int64_t dh = dim / heads;
  Graph& g = b.graph();
  Heads h;
  h.q = split_heads(dense(b.sub("q"), in.x, dim, dim), heads);
  const KeysValues kv = cached_kv(g, in, [&] {
    return KeysValues{split_heads(dense(b.sub("k"), in.memory, dim, kv_heads * dh), kv_heads),
                      split_heads(dense(b.sub("v"), in.memory, dim, kv_heads * dh), kv_heads)};
  });
  h.k = kv.k;
  h.v = kv.v;
  h.key_rows = kv.key_rows;
  return h;
}

void record_first_head(const AttentionInput& in, const Expr& q, const Expr& k, float scale) {
  if (!in.first_head) return;
  MOE_CHECK(!in.cache, "attention: the first head's weights are recorded in teacher-forced graphs only");
  const int64_t B = q.shape()[0], Tq = q.shape()[1], dh = q.shape()[3], Tk = k.shape()[1];
  Expr q0 = reshape(slice(q, 2, 0, 1), Shape{B, Tq, dh});
  Expr k0 = reshape(slice(k, 2, 0, 1), Shape{B, Tk, dh});
  const DType acc = q.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Expr scores = cast(matmul(q0, k0, false, true, scale), acc);  // [B, Tq, Tk]
  // The keys query i sees: real ones (key padding), and with causality j <= i + (Tk - Tq), as the attention op.
  const std::vector<uint8_t> padding =
      in.key_padding.defined() ? in.key_padding.to_vector<uint8_t>() : std::vector<uint8_t>();
  std::vector<uint8_t> keep(static_cast<size_t>(B * Tq * Tk), 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j)
        keep[static_cast<size_t>((b * Tq + i) * Tk + j)] =
            (padding.empty() || padding[static_cast<size_t>(b * Tk + j)] != 0) && (!in.causal || j <= i + Tk - Tq);
  *in.first_head = softmax(scores, Tensor::from_vector(keep, Shape{B, Tq, Tk}));
}

Expr attend_and_project(const Builder& b, const AttentionInput& in, const Heads& h, int64_t dim,
                        const Expr& head_weight) {
  const int64_t dh = h.q.shape()[3];
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  record_first_head(in, h.q, h.k, scale);
  Expr o = attention(h.q, h.k, h.v, in.key_padding, in.causal, scale, head_weight, in.dropout, h.key_rows);
  const Shape s = o.shape();  // a copy: in an inference graph the reshape below may free o's node
  o = reshape(o, Shape{s[0], s[1], s[2] * s[3]});
  return dense(b.sub("o"), o, s[2] * s[3], dim);
}

Expr multi_head_attention(const Builder& b, const AttentionInput& in, int64_t dim, int heads, const Expr& head_weight) {
  return attend_and_project(b, in, project_heads(b, in, dim, heads, heads), dim, head_weight);
}

}  // namespace moe
