// The MAE gate (mae.h; docs/MODELS.md §0 and §1.4, paper Appendix A) and the expert-to-head algebra:
//   g = softmax(W2 dropout(tanh(W1 BN(u) + b1)) + b2)          BN: BatchNorm1d(d), momentum 0.1, eps 1e-5
// BN by the site's gate_norm (issue 14): batch = the paper's BatchNorm1d (training normalises with
// the statistics of all N rows: every position of every sentence moves every gate), running =
// BN(u) = gamma (u - mu_run) / sqrt(var_run + eps) + beta in training as in inference, the running
// statistics then updated from the batch by a separate node that runs after (no gradient; nothing
// of this batch reaches its own gates: causal), none = BN(u) = u (no bn.* parameters).
//   w = c 1 - q (c P),  P[e, l] = 1 if expert e drops head l,  c = h / (h - dropped)
// Linear weights start as PyTorch's nn.Linear default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (the paper's
// fairseq gate), biases at 0, BN at gamma = 1, beta = 0, running mean 0 and variance 1.
// Covered by tests/layers/mae_test.cpp ("gate", "head weights") and
// tests/models/causality_test.cpp.
#include <cmath>
#include <tuple>
#include <vector>

#include "graph/expr/batch_norm.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/dropout.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/softmax.h"
#include "graph/expr/unary.h"
#include "layers/mae.h"
#include "layers/recent_tensors.h"

namespace moe {

namespace {
constexpr float kBnMomentum = 0.1f, kBnEps = 1e-5f;

/// -c P [E, h] (coeffs = false) or c 1 [1, h] (coeffs = true) in dtype on device, kept per thread.
/// Experts in order: MAE-(h-1) expert j drops head j; MAE-(h-2) pairs {i < j} in lexicographic order.
Tensor expert_algebra(int heads, int dropped, DType dtype, Device device, bool coeffs) {
  thread_local RecentTensors<std::tuple<int, int, DType, Device, bool>> cache;
  return cache.get({heads, dropped, dtype, device, coeffs}, [&] {
    const double c = static_cast<double>(heads) / (heads - dropped);
    if (coeffs)
      return Tensor::from_vector(std::vector<double>(static_cast<size_t>(heads), c), Shape{1, heads}, device, dtype);
    std::vector<double> v;
    auto row = [&](int i, int j) {
      for (int l = 0; l < heads; ++l) v.push_back(l == i || l == j ? -c : 0.0);
    };
    for (int i = 0; i < heads; ++i) {
      if (dropped == 1)
        row(i, i);
      else
        for (int j = i + 1; j < heads; ++j) row(i, j);
    }
    return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size()) / heads, heads}, device, dtype);
  });
}
}  // namespace

MaeGateWeights mae_gate_weights(const Builder& b, int64_t dim, const MaeOptions& o, GateNorm norm) {
  MOE_CHECK(o.gate == MaeGate::learned, "mae: a ", enum_name(o.gate), " gate has no weights");
  const DType dt = b.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Builder g = b.sub("gate");
  const int64_t hidden = o.gate_hidden, e = o.experts();
  auto param = [&](const std::string& leaf, const Shape& shape, const Init& init) {
    return cast(g.param(leaf, shape, init, "gate"), dt);
  };
  auto fan_in = [](int64_t n) { return Init::uniform(-1.0 / std::sqrt(double(n)), 1.0 / std::sqrt(double(n))); };
  MaeGateWeights w;
  const bool bn = norm != GateNorm::none;
  if (bn) {
    w.bn_gamma = param("bn.g", Shape{dim}, Init::ones());
    w.bn_beta = param("bn.b", Shape{dim}, Init::zeros());
  }
  w.w1 = param("l1.w", Shape{dim, hidden}, fan_in(dim));
  w.b1 = param("l1.b", Shape{hidden}, Init::zeros());
  w.w2 = param("l2.w", Shape{hidden, e}, fan_in(hidden));
  w.b2 = param("l2.b", Shape{e}, Init::zeros());
  if (bn) {
    w.running_mean = g.state("bn.mean", Shape{dim}, Init::zeros());
    w.running_var = g.state("bn.var", Shape{dim}, Init::ones());
  }
  return w;
}

Expr mae_gate_probs(const Expr& u, const MaeGateWeights& w, const MaeOptions& o, GateNorm norm, bool training) {
  MOE_CHECK(u.shape().ndim() == 2 && w.w1.shape().ndim() == 2 && u.shape()[1] == w.w1.shape()[0] &&
                w.w2.shape() == Shape({w.w1.shape()[1], o.experts()}),
            "mae ", o.name(), ": gate input ", u.shape(), " does not fit the gate weights ", w.w1.shape(), " and ",
            w.w2.shape(), " (need [N, d], [d, hidden], [hidden, E = ", o.experts(), "])");
  MOE_CHECK(norm == GateNorm::none || w.bn_gamma.defined(), "mae ", o.name(), ": gate norm ", enum_name(norm),
            " needs the BatchNorm weights (declared with norm none?)");
  Expr h = u;
  if (norm == GateNorm::batch) {
    // Batch statistics need two rows; a lone row (a one-sentence batch) is normalised by the running ones.
    const bool batch_stats = training && u.shape()[0] > 1;
    h = w.running_mean.defined()
            ? batch_norm(u, w.bn_gamma, w.bn_beta, w.running_mean, w.running_var, batch_stats, kBnMomentum, kBnEps)
            : batch_norm(u, w.bn_gamma, w.bn_beta, Tensor(), Tensor(), batch_stats, kBnMomentum, kBnEps);
  } else if (norm == GateNorm::running) {
    MOE_CHECK(w.running_mean.defined(), "mae ", o.name(), ": gate norm running needs running statistics");
    h = batch_norm(u, w.bn_gamma, w.bn_beta, w.running_mean, w.running_var, false, kBnMomentum, kBnEps);
    // The update: a training-mode BN of the detached input whose output nobody reads. Created after
    // h, it runs after h on the tape (Graph::forward runs nodes in creation order), so h saw the
    // statistics of earlier batches only. Inference graphs keep the running statistics as they are.
    if (training && u.shape()[0] > 1)
      batch_norm(stop_gradient(u), Expr(), Expr(), w.running_mean, w.running_var, true, kBnMomentum, kBnEps);
  }
  h = dropout(tanh(linear(h, w.w1, w.b1)), o.gate_dropout);
  return softmax(linear(h, w.w2, w.b2));
}

Expr mae_head_weights(const Expr& q, const MaeOptions& o) {
  MOE_CHECK(q.shape().ndim() == 2 && q.shape()[1] == o.experts(), "mae ", o.name(), ": expert weights ", q.shape(),
            " must be [N, ", o.experts(), "]");
  Graph& g = q.graph();
  Expr neg_cp = g.input(expert_algebra(o.heads, o.dropped, q.dtype(), g.device(), false));
  Expr c = g.input(expert_algebra(o.heads, o.dropped, q.dtype(), g.device(), true));
  return add(matmul(q, neg_cp), c);
}

Expr mae_one_hot(const Expr& idx, int64_t experts, DType dtype) {
  Graph& g = idx.graph();
  const int64_t n = idx.shape()[0];
  MOE_CHECK(idx.dtype() == DType::i32 && idx.shape() == Shape({n, 1}), "mae: expert ids must be i32 [N, 1], not ",
            dtype_name(idx.dtype()), " ", idx.shape());
  Expr zeros = g.input(Tensor::zeros(Shape{n, experts}, dtype, g.device()));
  Expr ones = add_scalar(g.input(Tensor::zeros(Shape{n, 1}, dtype, g.device())), 1.f);
  return scatter_add_last(zeros, idx, ones);
}

}  // namespace moe
