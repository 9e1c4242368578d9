// sampled_softmax.h implementation. The samples are drawn on the host (one per Philox lane) and the
// accidental hits found there from the targets; the scores of the k samples are one GEMM against the
// gathered rows of the output matrix, so the training logits are [N, 1 + k], never [N, V].
// Covered by tests/models/sampled_softmax_test.cpp.
#include "models/sampled_softmax.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/error.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/cross_entropy.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "tensor/philox.h"

namespace moe {

double log_uniform_probability(int64_t w, int64_t vocab) {
  return std::log((static_cast<double>(w) + 2) / (static_cast<double>(w) + 1)) /
         std::log(static_cast<double>(vocab) + 1);
}

std::vector<int32_t> draw_log_uniform(int64_t vocab, int64_t k, uint64_t seed, uint64_t stream) {
  MOE_CHECK(vocab > 0 && k > 0, "sampled softmax: ", k, " samples from a vocabulary of ", vocab);
  const double range = std::log(static_cast<double>(vocab) + 1);
  std::vector<int32_t> out(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {  // inverse CDF: P(W <= w) = log(w + 2) / log(V + 1)
    const double u = philox_uniform(seed, stream, static_cast<uint64_t>(j));
    const auto w = static_cast<int64_t>(std::floor(std::exp(u * range))) - 1;
    out[static_cast<size_t>(j)] = static_cast<int32_t>(std::clamp<int64_t>(w, 0, vocab - 1));
  }
  return out;
}

Expr sampled_softmax_loss(const Builder& b, const Expr& rows, const Expr& weight, const Tensor& targets,
                          const std::vector<int32_t>& samples) {
  Graph& g = b.graph();
  const int64_t n = rows.shape()[0], k = static_cast<int64_t>(samples.size()), vocab = weight.shape()[0];
  MOE_CHECK(rows.shape().ndim() == 2 && weight.shape().ndim() == 2 && rows.shape()[1] == weight.shape()[1] &&
                targets.numel() == n && k > 0,
            "sampled softmax: rows ", rows.shape(), ", output matrix ", weight.shape(), ", ", targets.numel(),
            " targets and ", k, " samples do not fit");
  const DType sd = rows.dtype() == DType::f64 ? DType::f64 : DType::f32;  // the scores' dtype
  // Sample scores, corrected by -log(k Q(s)).
  std::vector<float> correction(static_cast<size_t>(k));
  std::unordered_map<int32_t, std::vector<int64_t>> slots;  // word -> its sample positions
  for (int64_t j = 0; j < k; ++j) {
    const int32_t s = samples[static_cast<size_t>(j)];
    MOE_CHECK(s >= 0 && s < vocab, "sampled softmax: sample ", s, " outside the vocabulary of ", vocab);
    correction[static_cast<size_t>(j)] =
        static_cast<float>(-std::log(static_cast<double>(k) * log_uniform_probability(s, vocab)));
    slots[s].push_back(j);
  }
  Expr chosen = cast(index_select(weight, g.input(Tensor::from_vector(samples, Shape{k}))), rows.dtype());
  Expr scores = add(cast(matmul(rows, chosen, false, true), sd),
                    g.input(Tensor::from_vector(correction, Shape{1, k}, Device::cpu(), sd)));
  // Accidental hits: a sample equal to the row's target leaves the estimate (score -1e30).
  const std::vector<int32_t> t = targets.to(Device::cpu()).to_vector<int32_t>();
  std::vector<int32_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (const auto it = slots.find(t[static_cast<size_t>(i)]); it != slots.end())
      for (int64_t j : it->second) hits.push_back(static_cast<int32_t>(i * k + j));
  if (!hits.empty()) {
    const auto h = static_cast<int64_t>(hits.size());
    Expr removed =
        index_add(g.input(Tensor::zeros(Shape{n * k, 1}, sd, g.device())), g.input(Tensor::from_vector(hits, Shape{h})),
                  g.input(Tensor::from_vector(std::vector<float>(static_cast<size_t>(h), -1e30f), Shape{h, 1},
                                              Device::cpu(), sd)));
    scores = add(scores, reshape(removed, Shape{n, k}));
  }
  // The target's own score, uncorrected, in column 0.
  Expr own = cast(index_select(weight, g.input(targets.view(Shape{n}))), rows.dtype());
  Expr target_score = cast(reduce(ReduceOp::sum, mul(rows, own), -1, true), sd);
  Expr zeros = g.input(Tensor::zeros(Shape{n}, DType::i32, g.device()));
  return cross_entropy(concat({target_score, scores}, 1), zeros, 0.f, -1);
}

}  // namespace moe
