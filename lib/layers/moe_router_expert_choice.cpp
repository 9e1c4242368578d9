// Router expert_choice: experts pick their tokens (Zhou et al. 2022, "Mixture-of-Experts with Expert
// Choice Routing", §3.1, eq. 1-2; docs/MODELS.md §3.15). S = softmax(x W_g) over the experts; within each
// sentence (a row of the layer's [B, T] rows, its padding excluded) of L real tokens, expert i takes the
//   c = min(L, ceil(k L / n))
// tokens with the largest S[., i] (k: the paper's capacity factor, the experts a token gets on average),
// gate S[t, i]; a token no expert took gets an MoE output of 0. The paper ranks over a group of tokens
// (the batch); moe ranks within a sentence, so a sentence routes the same in any batch, in training and
// at inference (moe-translate and moe-serve decode alike), and never sees another sentence. Every
// position sees its whole sentence (RoutingScope::sequence): encoders and masked LMs only, which the
// models enforce (check_routing). No auxiliary loss: every expert is full by construction.
// W_g ~ N(0, 0.1 / d) (zeros would give every expert the same tokens).
// Covered by tests/layers/moe_router_test.cpp and tests/gpu/moe_routers_parity_test.cpp.
#include <algorithm>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "layers/moe_ffn.h"
#include "layers/moe_router_flat.h"

namespace moe {

namespace {
struct NoKeys {};
const config::Keys<NoKeys>& no_keys() {
  static const config::Keys<NoKeys> keys("router expert_choice");
  return keys;
}

/// Real tokens per row of [rows, cols] (padding undefined: all).
std::vector<int64_t> row_lengths(const Tensor& padding, int64_t rows, int64_t cols) {
  std::vector<int64_t> len(static_cast<size_t>(rows), cols);
  if (!padding.defined()) return len;
  const std::vector<double> p = padding.to(Device::cpu()).to_vector<double>();
  MOE_CHECK(static_cast<int64_t>(p.size()) == rows * cols, "expert choice: padding of ", p.size(), " entries for ",
            rows, " x ", cols, " tokens");
  for (int64_t r = 0; r < rows; ++r)
    len[static_cast<size_t>(r)] =
        std::count_if(p.begin() + r * cols, p.begin() + (r + 1) * cols, [](double v) { return v != 0; });
  return len;
}

class ExpertChoiceRouter : public MoeRouter {
 public:
  explicit ExpertChoiceRouter(const NoKeys&) {}
  const std::string& name() const override {
    static const std::string n = "expert_choice";
    return n;
  }
  RouterTraits traits(const MoeOptions&) const override {
    RouterTraits t;
    t.training = t.inference = RoutingScope::sequence;
    t.token_choice = false;
    t.reads_padding = true;
    return t;
  }
  void validate(const MoeOptions& o) const override {
    MOE_CHECK(o.groups <= 1, "moe: gating expert_choice is flat: groups ", o.groups, " needs gating noisy_topk");
    MOE_CHECK(o.k >= 1 && o.k <= o.experts, "moe: k = ", o.k, " (expert_choice: experts per token on average) must be ",
              "in [1, experts = ", o.experts, "]");
  }
  RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const override {
    return {{"gate.w", declare_linear_gate(b, o, gate_dtype)}};
  }
  RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                     const RouterContext& c) const override {
    Graph& g = xg.graph();
    const int64_t n = o.experts, rows_all = xg.shape()[0];
    const bool seq = c.lead.ndim() == 2 && c.lead.numel() == rows_all;
    const int64_t B = seq ? c.lead[0] : 1, T = seq ? c.lead[1] : rows_all;
    const std::vector<int64_t> len = row_lengths(seq ? c.padding : Tensor(), B, T);
    std::vector<int64_t> cap(static_cast<size_t>(B));
    int64_t widest = 0;
    for (size_t r = 0; r < cap.size(); ++r) {
      cap[r] = std::min(len[r], static_cast<int64_t>(std::ceil(static_cast<double>(o.k * len[r]) / n - 1e-9)));
      widest = std::max(widest, cap[r]);
    }
    RouterResult res;
    const Expr logits = matmul(xg, w.at("gate.w"));
    res.logits = {logits};
    const Expr probs = softmax(logits);  // [B T, n]
    if (widest == 0) {                   // no real token: no assignment
      res.routing = Routing{g.input(Tensor::zeros(Shape{0}, DType::i32, g.device())),
                            g.input(Tensor::zeros(Shape{0, 1}, probs.dtype(), g.device())),
                            g.input(Tensor::zeros(Shape{0}, DType::i32, g.device())), 1};
      return res;
    }
    // Each expert's scores over its sentence's positions, padding pushed below every probability.
    Expr scores = transpose(reshape(probs, {B, T, n}), {0, 2, 1});  // [B, n, T]
    if (c.padding.defined() && seq) {
      const std::vector<double> p = c.padding.to(Device::cpu()).to_vector<double>();
      std::vector<double> shift(p.size());
      for (size_t i = 0; i < p.size(); ++i) shift[i] = p[i] != 0 ? 0.0 : -2.0;
      scores = scores + g.input(Tensor::from_vector(shift, Shape{B, 1, T}, g.device(), probs.dtype()));
    }
    const TopK top = topk(scores, widest);  // [B, n, widest]
    // Keep slot j of (row r, expert i) when j < cap[r]; its token r T + index.
    std::vector<int32_t> kept, expert;
    for (int64_t r = 0; r < B; ++r)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < cap[static_cast<size_t>(r)]; ++j) {
          kept.push_back(static_cast<int32_t>((r * n + i) * widest + j));
          expert.push_back(static_cast<int32_t>(i));
        }
    const int64_t m = static_cast<int64_t>(kept.size()), slots = B * n * widest;
    const Expr keep = g.input(Tensor::from_vector(kept, Shape{m}, g.device()));
    const Expr token_all = route_index(iota_index(g, B * n), n, reshape(top.indices, {B * n, widest}), T);
    const Expr token =
        cast(reshape(index_select(cast(reshape(token_all, {slots, 1}), DType::f32), keep), {m}), DType::i32);
    const Expr weight = index_select(reshape(top.values, {slots, 1}), keep);
    res.routing = Routing{g.input(Tensor::from_vector(expert, Shape{m}, g.device())), weight, token, 1};
    return res;
  }
};
}  // namespace

RouterFamily expert_choice_router() {
  return router_family<NoKeys, ExpertChoiceRouter>(
      "expert_choice",
      "experts pick their tokens (Zhou et al. 2022): within each sentence, expert i takes its ceil(k L / n) "
      "best tokens; encoders and masked LMs only",
      &no_keys);
}

}  // namespace moe
