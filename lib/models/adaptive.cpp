// adaptive.h implementation. Token ids and targets are split by band on the host (a copy from the
// device when they live there): each band's rows are gathered with index_select, so a tail's
// matmuls cover only its own tokens; the adaptive input puts the bands' rows back in token order
// with one index_select of their concatenation.
#include "models/adaptive.h"

#include <algorithm>
#include <cmath>

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

namespace moe {

namespace {
int64_t band_of(const AdaptiveSpec& s, int64_t id) {
  return std::upper_bound(s.cutoffs.begin(), s.cutoffs.end(), id) - s.cutoffs.begin();
}

Tensor i32_tensor(const std::vector<int32_t>& v) {
  return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

Init embedding_init(int64_t d) { return Init::normal(0, std::pow(static_cast<double>(d), -0.5)); }
}  // namespace

int64_t AdaptiveSpec::band_dim(int64_t i) const {
  return static_cast<int64_t>(std::floor(static_cast<double>(dim) / std::pow(factor, static_cast<double>(i))));
}

void AdaptiveSpec::validate(const std::string& what) const {
  MOE_CHECK(vocab > 0 && dim > 0, what, ": vocabulary ", vocab, " and dimension ", dim, " must be positive");
  MOE_CHECK(factor >= 1, what, ": factor ", factor, " must be >= 1");
  int64_t prev = 0;
  for (int64_t c : cutoffs) {
    MOE_CHECK(c > prev && c < vocab, what, ": cutoffs must increase strictly inside (0, vocab = ", vocab, "); got ", c,
              " after ", prev);
    prev = c;
  }
  MOE_CHECK(band_dim(bands() - 1) >= 1, what, ": dimension ", dim, " / factor ", factor, "^", bands() - 1,
            " leaves the last band no features");
}

Expr adaptive_input(const std::vector<Expr>& emb, const std::vector<Expr>& proj, const AdaptiveSpec& spec,
                    const Tensor& ids, float scale) {
  MOE_CHECK(static_cast<int64_t>(emb.size()) == spec.bands() && static_cast<int64_t>(proj.size()) == spec.bands(),
            "adaptive_input: ", emb.size(), " tables and ", proj.size(), " projections for ", spec.bands(), " bands");
  MOE_CHECK(ids.dtype() == DType::i32 && ids.numel() > 0, "adaptive_input: ids must be non-empty i32, got ",
            dtype_name(ids.dtype()), " ", ids.shape());
  const std::vector<int32_t> v = ids.to_vector<int32_t>();
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(spec.bands())), local(rows.size());
  for (int64_t k = 0; k < n; ++k) {
    const int32_t id = v[static_cast<size_t>(k)];
    MOE_CHECK(id >= 0 && id < spec.vocab, "adaptive_input: token id ", id, " at position ", k,
              " is outside the vocabulary of ", spec.vocab);
    const auto band = static_cast<size_t>(band_of(spec, id));
    rows[band].push_back(static_cast<int32_t>(k));
    local[band].push_back(static_cast<int32_t>(id - spec.band_begin(static_cast<int64_t>(band))));
  }
  Graph& g = proj[0].graph();
  const DType dt = proj[0].dtype();
  std::vector<Expr> parts;
  std::vector<int32_t> order;  // token position of each row of the concatenation
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].empty()) continue;
    Expr e = embedding(emb[i], g.input(i32_tensor(local[i])), scale, dt);
    parts.push_back(matmul(e, proj[i]));
    order.insert(order.end(), rows[i].begin(), rows[i].end());
  }
  Expr x = parts.size() == 1 ? parts[0] : concat(parts, 0);
  bool identity = true;
  for (int64_t k = 0; k < n && identity; ++k) identity = order[static_cast<size_t>(k)] == k;
  if (!identity) {
    std::vector<int32_t> inv(order.size());
    for (size_t j = 0; j < order.size(); ++j) inv[static_cast<size_t>(order[j])] = static_cast<int32_t>(j);
    x = index_select(x, g.input(i32_tensor(inv)));
  }
  std::vector<int64_t> shape = ids.shape().vec();
  shape.push_back(spec.dim);
  return reshape(x, shape);
}

Expr adaptive_input(const Builder& b, const AdaptiveSpec& spec, const Tensor& ids, float scale) {
  spec.validate(b.name("adaptive_input"));
  std::vector<Expr> emb, proj;
  for (int64_t i = 0; i < spec.bands(); ++i) {
    const int64_t di = spec.band_dim(i), size = spec.band_end(i) - spec.band_begin(i);
    const std::string k = std::to_string(i);
    emb.push_back(b.param("emb" + k, Shape{size, di}, embedding_init(di)));
    proj.push_back(b.weight("proj" + k, Shape{di, spec.dim}, Init::glorot_uniform()));
  }
  return adaptive_input(emb, proj, spec, ids, scale);
}

AdaptiveSoftmaxWeights adaptive_softmax_weights(const Builder& b, const Builder& input, const AdaptiveSpec& spec,
                                                const AdaptiveSoftmaxOptions& opt) {
  spec.validate(b.name("adaptive_softmax"));
  const int64_t c1 = spec.band_end(0), tails = spec.bands() - 1, d = spec.dim;
  AdaptiveSoftmaxWeights w;
  if (opt.tie_weights) {
    Expr words = input.weight("emb0", Shape{c1, spec.band_dim(0)}, embedding_init(spec.band_dim(0)));
    w.head =
        tails == 0 ? words : concat({words, b.weight("head.clusters", Shape{tails, d}, Init::glorot_uniform())}, 0);
  } else {
    w.head = b.weight("head", Shape{c1 + tails, d}, Init::glorot_uniform());
  }
  for (int64_t i = 1; i < spec.bands(); ++i) {
    const int64_t di = spec.band_dim(i), size = spec.band_end(i) - spec.band_begin(i);
    const std::string k = std::to_string(i);
    w.tail_proj.push_back(opt.tie_proj ? input.weight("proj" + k, Shape{di, d}, Init::glorot_uniform())
                                       : b.weight("tail" + k + ".proj", Shape{di, d}, Init::glorot_uniform()));
    w.tail_out.push_back(opt.tie_weights ? input.weight("emb" + k, Shape{size, di}, embedding_init(di))
                                         : b.weight("tail" + k + ".out", Shape{size, di}, Init::glorot_uniform()));
  }
  return w;
}

Expr adaptive_softmax_loss(const AdaptiveSoftmaxWeights& w, const AdaptiveSpec& spec, const Expr& h,
                           const Tensor& targets, const Tensor& mask, float label_smoothing, float dropout_p) {
  const int64_t n = h.shape()[0], c1 = spec.band_end(0);
  MOE_CHECK(h.shape().ndim() == 2 && h.shape()[1] == spec.dim, "adaptive_softmax: hidden states ", h.shape(),
            " are not [N, ", spec.dim, "]");
  MOE_CHECK(targets.dtype() == DType::i32 && targets.numel() == n, "adaptive_softmax: targets (",
            dtype_name(targets.dtype()), " ", targets.shape(), ") must be i32 with one per row of ", h.shape());
  MOE_CHECK(!mask.defined() || mask.numel() == n, "adaptive_softmax: mask ", mask.shape(), " for ", n, " rows");
  MOE_CHECK(static_cast<int64_t>(w.tail_proj.size()) == spec.bands() - 1 &&
                static_cast<int64_t>(w.tail_out.size()) == spec.bands() - 1,
            "adaptive_softmax: weights for ", w.tail_out.size(), " tails, the spec has ", spec.bands() - 1);
  const std::vector<int32_t> t = targets.to_vector<int32_t>();
  const std::vector<float> m = mask.defined() ? mask.to_vector<float>() : std::vector<float>(t.size(), 1.f);
  std::vector<int32_t> head_t(t.size(), -1);
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(spec.bands())), local(rows.size());
  std::vector<std::vector<double>> row_weights(rows.size());  // each band's rows' mask values
  for (int64_t k = 0; k < n; ++k) {
    if (m[static_cast<size_t>(k)] == 0.f) continue;
    const int32_t id = t[static_cast<size_t>(k)];
    MOE_CHECK(id >= 0 && id < spec.vocab, "adaptive_softmax: target ", id, " at row ", k,
              " is outside the vocabulary of ", spec.vocab);
    const int64_t band = band_of(spec, id);
    head_t[static_cast<size_t>(k)] = static_cast<int32_t>(band == 0 ? id : c1 + band - 1);
    rows[static_cast<size_t>(band)].push_back(static_cast<int32_t>(k));
    local[static_cast<size_t>(band)].push_back(static_cast<int32_t>(id - spec.band_begin(band)));
    row_weights[static_cast<size_t>(band)].push_back(m[static_cast<size_t>(k)]);
  }
  Graph& g = h.graph();
  // A mask of weights (data weighting) multiplies each row's cross-entropy by its own; one of 0 and 1 only selects.
  const bool weighted = std::any_of(m.begin(), m.end(), [](float x) { return x != 0.f && x != 1.f; });
  auto weigh = [&](const Expr& ce, const std::vector<double>& weights) {
    const auto size = static_cast<int64_t>(weights.size());
    return weighted ? mul(ce, g.input(Tensor::from_vector(weights, Shape{size}, Device::cpu(), ce.dtype()))) : ce;
  };
  Expr head_logits = matmul(h, w.head, false, true);
  Expr loss = sum_all(weigh(cross_entropy(head_logits, g.input(i32_tensor(head_t)), label_smoothing, -1),
                            std::vector<double>(m.begin(), m.end())));
  for (int64_t i = 1; i < spec.bands(); ++i) {
    const auto& r = rows[static_cast<size_t>(i)];
    if (r.empty()) continue;
    Expr hi = index_select(h, g.input(i32_tensor(r)));
    Expr z = dropout(matmul(hi, w.tail_proj[static_cast<size_t>(i - 1)], false, true), dropout_p);
    Expr logits = matmul(z, w.tail_out[static_cast<size_t>(i - 1)], false, true);
    Expr tl = cross_entropy(logits, g.input(i32_tensor(local[static_cast<size_t>(i)])), label_smoothing, -1);
    loss = add(loss, sum_all(weigh(tl, row_weights[static_cast<size_t>(i)])));
  }
  return loss;
}

Expr adaptive_log_probs(const AdaptiveSoftmaxWeights& w, const AdaptiveSpec& spec, const Expr& h) {
  MOE_CHECK(h.shape().ndim() == 2 && h.shape()[1] == spec.dim, "adaptive_log_probs: hidden states ", h.shape(),
            " are not [N, ", spec.dim, "]");
  const DType out = h.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const int64_t c1 = spec.band_end(0);
  Expr head = log_softmax(cast(matmul(h, w.head, false, true), out));
  if (spec.bands() == 1) return head;
  std::vector<Expr> parts{slice(head, 1, 0, c1)};
  for (int64_t i = 1; i < spec.bands(); ++i) {
    Expr z = matmul(h, w.tail_proj[static_cast<size_t>(i - 1)], false, true);
    Expr tail = log_softmax(cast(matmul(z, w.tail_out[static_cast<size_t>(i - 1)], false, true), out));
    parts.push_back(add(tail, slice(head, 1, c1 + i - 1, 1)));
  }
  return concat(parts, 1);
}

}  // namespace moe
