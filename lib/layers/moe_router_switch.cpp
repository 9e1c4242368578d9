// Router switch: the Switch Transformer's router (Fedus et al. 2022, §2.1-2.2, eq. 1-4; docs/MODELS.md
// §3.14), softmax over all n experts, each token to its top k (k 1: Switch; k > 1 the same softmax top-k
// as GShard's top-2 without its random second expert, and DeepSeekMoE's routed experts), the gate the
// expert's probability p_i(x) itself (normalize: true renormalises over the k). Its balancing loss over the
// batch X (the global batch with several ranks),
//   balance = w_balance * n * sum_i f_i P_i,  f_i = assignments to i / (k |X|),  P_i = (1/|X|) sum_x p_i(x),
// is 1 at perfect balance; the gradient flows through P only. W_g ~ N(0, 0.1 / d) (Switch's scale 0.1).
// Routing per token (RoutingScope::token); with capacity_factor (1.25 in Switch) a token capacity.
// Covered by tests/layers/moe_router_test.cpp and tests/gpu/moe_routers_parity_test.cpp.

#include "dist/collective_exprs.h"
#include "graph/expr/binary.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "graph/expr/unary.h"
#include "layers/moe_ffn.h"
#include "layers/moe_router_flat.h"

namespace moe {

namespace {
struct SwitchKeys {
  float w_balance = 0.01f;  // alpha (Switch: 1e-2)
  bool normalize = false;   // renormalise the k gates to sum 1
};
const config::Keys<SwitchKeys>& switch_keys() {
  static const config::Keys<SwitchKeys> keys =
      config::Keys<SwitchKeys>("router switch")
          .add("w_balance", &SwitchKeys::w_balance, "switch: coefficient of n sum_i f_i P_i (Switch: 0.01)",
               config::at_least(0.f))
          .add("normalize", &SwitchKeys::normalize, "switch: renormalise a token's k gates to sum 1 (false: p_i)");
  return keys;
}

class SwitchRouter : public MoeRouter {
 public:
  explicit SwitchRouter(const SwitchKeys& k) : k_(k) {}
  const std::string& name() const override {
    static const std::string n = "switch";
    return n;
  }
  RouterTraits traits(const MoeOptions& o) const override {
    RouterTraits t;
    t.max_per_token = o.k;
    return t;
  }
  void validate(const MoeOptions& o) const override {
    validate_flat_topk(o, name());
  }
  RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const override {
    return {{"gate.w", declare_linear_gate(b, o, gate_dtype)}};
  }
  RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                     const RouterContext& c) const override {
    RouterResult r;
    const Expr logits = matmul(xg, w.at("gate.w"));
    const Expr probs = softmax(logits);  // [R, n]
    const TopK top = topk(probs, o.k);
    const Expr gates = k_.normalize ? top.values / sum(top.values, 1, true) : top.values;
    const int64_t m = top.indices.shape().numel();
    r.routing = Routing{reshape(top.indices, {m}), reshape(gates, {m, 1}), Expr(), o.k};
    r.logits = {logits};
    if (c.training && k_.w_balance > 0) {
      Expr counts = expert_counts(r.routing.expert, o.experts, probs.dtype());  // [n], no gradient
      Expr mass = sum(probs, 0);                                                // [n]: |X| P_i
      if (c.comm && c.comm->world() > 1) {
        counts = dist::all_reduce_sum(*c.comm, counts);
        mass = dist::all_reduce_sum(*c.comm, mass);
      }
      // f_i P_i = (c_i / S)(mass_i k / S) with S = sum_i c_i = k |X|.
      const Expr total = sum_all(counts);
      const Expr fp = sum_all(counts * mass) / scale(square(total), 1.f, 1e-20f);
      r.losses.push_back({"balance", scale(fp, k_.w_balance * static_cast<float>(o.experts * o.k))});
    }
    return r;
  }

 private:
  SwitchKeys k_;
};
}  // namespace

RouterFamily switch_router() {
  return router_family<SwitchKeys, SwitchRouter>(
      "switch",
      "the Switch Transformer's softmax top-k (k 1: Switch) with its balancing loss n sum f_i P_i; with "
      "capacity_factor 1.25 as the paper",
      &switch_keys);
}

}  // namespace moe
