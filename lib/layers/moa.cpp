// MoA sublayer (moa.h): map -> attend -> reduce (docs/MODELS.md §2.3-2.4, §2.7).
//   sparse: pairs (t, j) sorted by expert; q_sorted = grouped_matmul(x[tok_sorted], A, offsets), back to
//           slot order by the inverse permutation; o = attention(q [B,T,k,D], K, V [B,S,1,D]) with the
//           gates as per-(position, head) weights; z = index_add(0, tok_sorted, grouped_matmul(o_sorted, B))
//   dense (k = E): q = x [A_1 .. A_E] (one GEMM), z = (w * o) [B_1; ..; B_E] (one GEMM).
// Covered by tests/layers/moa_test.cpp.
#include "layers/moa.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/expr/attention.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/grouped_gemm.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/sort.h"
#include "layers/gate_recorder.h"

namespace moe {

namespace {
DType router_dtype(DType compute) { return compute == DType::f64 ? DType::f64 : DType::f32; }

/// keep [B*T] in `dtype` from a u8 [B, T] padding mask (1 = real token), converted on the device as a node
/// of the graph: the host never reads the mask, and a replay of a captured graph converts its new contents.
Expr keep_from_mask(Graph& g, const Tensor& mask, int64_t b, int64_t t, DType dtype) {
  MOE_CHECK(mask.dtype() == DType::u8 && mask.shape() == Shape({b, t}), "moa: query padding ", mask.shape(), " ",
            dtype_name(mask.dtype()), " does not fit queries [", b, ",", t, "] (u8 required)");
  return reshape(cast(g.input(mask.device() == g.device() ? mask : mask.to(g.device())), dtype), Shape{b * t});
}

/// tok[s] = s / k for the n*k slots, on `device`; a few recent tables are kept per thread (contents
/// depend only on (pairs, k)), so repeated sublayers of one batch upload nothing.
Tensor slot_tokens(int64_t pairs, int64_t k, Device device) {
  struct Entry {
    int64_t pairs, k;
    Device device;
    Tensor tok;
  };
  thread_local std::vector<Entry> recent;
  for (const Entry& e : recent)
    if (e.pairs == pairs && e.k == k && e.device == device) return e.tok;
  std::vector<int32_t> tok(static_cast<size_t>(pairs));
  for (int64_t s = 0; s < pairs; ++s) tok[static_cast<size_t>(s)] = static_cast<int32_t>(s / k);
  Tensor t = Tensor::from_vector(tok, Shape{pairs}, device);
  if (recent.size() >= 8) recent.erase(recent.begin());
  recent.push_back(Entry{pairs, k, device, t});
  return t;
}

/// Shared keys and values [B, S, 1, D] with the cache applied (as project_heads does for MHA).
KeysValues shared_kv(const AttentionInput& in, const MoaWeights& w) {
  return cached_kv(w.k.graph(), in, [&] {
    MOE_CHECK(in.memory.defined(), "moa: keys/values need the memory (or a filled cross-attention cache)");
    const Shape& s = in.memory.shape();
    const int64_t dd = w.k.shape()[1];
    return KeysValues{reshape(linear(in.memory, w.k), Shape{s[0], s[1], 1, dd}),
                      reshape(linear(in.memory, w.v), Shape{s[0], s[1], 1, dd})};
  });
}
}  // namespace

MoaResult moa_attention(const AttentionInput& in, const MoaWeights& w, const MoaOptions& o, const Tensor& query_padding,
                        int with_aux) {
  const Shape& xs = in.x.shape();
  MOE_CHECK(xs.ndim() == 3, "moa: queries must be [B, T, d], not ", xs);
  const int64_t bsz = xs[0], t = xs[1], d = xs[2], n = bsz * t, dd = o.head_dim, e = o.experts, k = o.k;
  MOE_CHECK(w.q.shape() == Shape({e, d, dd}) && w.o.shape() == Shape({e, dd, d}) && w.k.shape() == Shape({d, dd}) &&
                w.v.shape() == Shape({d, dd}),
            "moa ", o.name(), ": weights q ", w.q.shape(), ", o ", w.o.shape(), ", k ", w.k.shape(), ", v ",
            w.v.shape(), " do not fit d = ", d, " (need [E, d, D], [E, D, d], [d, D], [d, D])");
  Graph& g = in.x.graph();
  const DType rdt = router_dtype(in.x.dtype());
  Expr x2 = reshape(in.x, Shape{n, d});
  MoaResult res;
  if (query_padding.defined()) res.keep = keep_from_mask(g, query_padding, bsz, t, rdt);
  res.routing = moa_route(cast(x2, rdt), w.router, res.keep, o, with_aux < 0 ? g.training() : with_aux > 0);
  const MoaRouting& r = res.routing;
  const KeysValues kv = shared_kv(in, w);
  const float sc = 1.0f / std::sqrt(static_cast<float>(dd));

  if (o.dense()) {
    Expr a_flat = reshape(transpose(w.q, {1, 0, 2}), Shape{d, e * dd});
    Expr q = reshape(matmul(x2, a_flat), Shape{bsz, t, e, dd});
    Expr hw = reshape(cast(r.dense_gates, in.x.dtype()), Shape{bsz, t, e});
    record_first_head(in, q, kv.k, sc);  // expert 0
    Expr att = attention(q, kv.k, kv.v, in.key_padding, in.causal, sc, hw, in.dropout, kv.key_rows);
    Expr z = matmul(reshape(att, Shape{n, e * dd}), reshape(w.o, Shape{e * dd, d}));
    res.out = reshape(z, Shape{bsz, t, d});
    return res;
  }

  // Sparse: sort the n*k (token, slot) pairs by expert. Pairs of padded tokens keep their slots (their
  // gates are 0, so they add nothing and receive no gradient) and the grouped GEMM stays free of host syncs.
  const int64_t pairs = n * k;
  SortedSegments seg = sort_by_key(reshape(r.experts, Shape{pairs}), static_cast<int>(e));
  Expr inv = inverse_permutation(seg.perm);
  Expr tok_sorted = index_select(g.input(slot_tokens(pairs, k, g.device())), seg.perm);
  Expr q_sorted = grouped_matmul(index_select(x2, tok_sorted), w.q, seg.offsets);  // [P, D]
  Expr q = reshape(index_select(q_sorted, inv), Shape{bsz, t, k, dd});
  Expr hw = reshape(cast(r.gates, in.x.dtype()), Shape{bsz, t, k});
  record_first_head(in, q, kv.k, sc);  // each token's most-weighted expert
  Expr att = attention(q, kv.k, kv.v, in.key_padding, in.causal, sc, hw, in.dropout, kv.key_rows);  // gated heads
  Expr o_sorted = index_select(reshape(att, Shape{pairs, dd}), seg.perm);
  Expr y_sorted = grouped_matmul(o_sorted, w.o, seg.offsets);  // [P, d]
  Expr zeros = g.input(Tensor::zeros(Shape{n, d}, in.x.dtype(), g.device()));
  res.out = reshape(index_add(zeros, tok_sorted, y_sorted), Shape{bsz, t, d});
  return res;
}

MoaWeights moa_weights(const Builder& b, int64_t dim, const MoaOptions& o) {
  const int64_t e = o.experts, dd = o.head_dim;
  const DType rdt = router_dtype(b.dtype());
  const double kv = std::sqrt(3.0 / static_cast<double>(dim + dd));  // Xavier-uniform with gain 1/sqrt(2)
  MoaWeights w;
  w.router = cast(b.param("router.w", Shape{dim, e}, Init::zeros(), "gate"), rdt);
  w.q = b.weight("q.w", Shape{e, dim, dd}, Init::glorot_uniform());
  w.o = b.weight("o.w", Shape{e, dd, dim}, Init::glorot_uniform());
  w.k = b.weight("k.w", Shape{dim, dd}, Init::uniform(-kv, kv));
  w.v = b.weight("v.w", Shape{dim, dd}, Init::uniform(-kv, kv));
  return w;
}

Expr moa_attention_layer(const Builder& b, const AttentionInput& in, int64_t dim, const MoaOptions& o) {
  const bool encoder_like = in.self_attention && !in.cache && in.key_padding.defined() &&
                            in.key_padding.shape().ndim() == 2 && in.key_padding.shape()[1] == in.x.shape()[1];
  const Tensor padding = encoder_like ? in.key_padding : Tensor();
  MoaResult r = moa_attention(in, moa_weights(b, dim, o), o, padding);
  if (GateRecorder* rec = b.training() ? nullptr : b.context().recorder) {
    const Shape& s = in.x.shape();
    GateRecord g;
    g.family = "moa";
    g.policy = "top" + std::to_string(o.k);
    g.probs = r.routing.probs.val().view(Shape{s[0], s[1], o.experts});
    g.query_padding = padding.defined() ? padding : in.query_padding;
    g.experts = r.routing.experts.val().view(Shape{s[0], s[1], o.k});
    g.gates = r.routing.gates.val().view(Shape{s[0], s[1], o.k});
    rec->record(b.prefix(), std::move(g));
  }
  if (b.training() && r.routing.aux.defined()) {
    // The trainer weights each aux term by the batch's target tokens (per-token-mean strength); "sum"
    // undoes that so the term lands on the token-summed loss as in the released code.
    Expr aux = cast(r.routing.aux, DType::f32);
    if (o.aux_normalization == MoaAuxNormalization::sum) {
      const int64_t batch_tokens = b.context().target_tokens;
      const int64_t queries = in.x.shape()[0] * in.x.shape()[1];
      if (batch_tokens > 0 || !r.keep.defined())
        aux = mul_scalar(aux, 1.0f / static_cast<float>(std::max<int64_t>(batch_tokens > 0 ? batch_tokens : queries, 1)));
      else  // the real queries, counted on the device (+1e-30: exact for a count >= 1, and 0 stays 0)
        aux = div(aux, add_scalar(cast(sum_all(r.keep), DType::f32), 1e-30f));
    }
    b.add_aux_loss("moa.aux", aux);
  }
  return r.out;
}

void moa_fill_cross_cache(const Builder& b, const Expr& memory, int64_t dim, const MoaOptions& o, KVCache& cache) {
  const MoaWeights w = moa_weights(b, dim, o);
  const Shape& s = memory.shape();
  cache.k = reshape(linear(memory, w.k), Shape{s[0], s[1], 1, o.head_dim}).val();
  cache.v = reshape(linear(memory, w.v), Shape{s[0], s[1], 1, o.head_dim}).val();
}

}  // namespace moe
