// moe_ffn.h implementation (options: moe_options.cpp): the layer on explicit weights, and the builder front ends
// (parameters, noise streams, aux losses). Covered by tests/layers/moe_ffn_test.cpp.
#include "layers/moe_ffn.h"

#include <string_view>

#include "dist/collective_exprs.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/dropout.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/unary.h"
#include "layers/gate_recorder.h"
#include "layers/moe_ffn_expert_parallel.h"
#include "layers/moe_ffn_hierarchical.h"

namespace moe {

namespace {
constexpr const char* kThresholdLeaf = "gate.thresholds";
}  // namespace

bool is_batchwise_threshold(const ParamEntry& e) {
  const std::string_view name = e.name, leaf = kThresholdLeaf;
  return name == leaf || (name.ends_with(leaf) && name[name.size() - leaf.size() - 1] == '.');
}

bool expert_parallel(const MoeOptions& opt, dist::Communicator* comm) {
  if (opt.experts_per_rank <= 0 || !comm || comm->world() == 1) return false;
  MOE_CHECK(static_cast<int64_t>(opt.experts_per_rank) * comm->world() == opt.experts, "moe: experts_per_rank ",
            opt.experts_per_rank, " times ", comm->world(), " ranks must equal experts = ", opt.experts);
  return true;
}

namespace {
/// Reports the routing of `rows` tokens (leading shape `lead`) to the recorder (family moe).
void record_routing(GateRecorder& rec, const std::string& site, const Routing& r, const MoeOptions& opt,
                    const Shape& lead) {
  const std::vector<int32_t> expert = r.expert.val().to_vector<int32_t>();
  // Assignment a fills slot a / per_token: that token itself, or routing.token[slot] when given.
  const std::vector<int32_t> slot_token =
      r.token.defined() ? r.token.val().to_vector<int32_t>() : std::vector<int32_t>{};
  std::vector<int32_t> token;
  for (size_t a = 0; a < expert.size(); ++a) {
    const size_t slot = a / static_cast<size_t>(r.per_token);
    token.push_back(r.token.defined() ? slot_token[slot] : static_cast<int32_t>(slot));
  }
  GateRecord g = routed_gate_record(expert, r.weight.val().to_vector<double>(), token, opt.experts, lead);
  g.family = "moe";
  g.policy = opt.gating == MoeGating::batchwise ? "batchwise" : opt.groups > 1 ? "hierarchical_topk" : "noisy_topk";
  rec.record(site, std::move(g));
}
}  // namespace

MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const GateNoise& noise,
                      const GateNoise& noise2, bool training, dist::Communicator* comm) {
  MOE_CHECK(x.shape().ndim() == 2 && x.shape()[1] == opt.dim, "moe: input ", x.shape(), " must be [tokens, ", opt.dim,
            "]");
  const DType gate_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Expr xg = cast(x, gate_dtype);
  MoeOutput out;
  Routing routing;
  if (opt.gating == MoeGating::batchwise) {
    BatchwiseGate gate = batchwise_gate(matmul(xg, w.w_gate), w.thresholds, opt.k, training, opt.batchwise_inference_k);
    routing = gate.routing;
    out.importance = gate.importance;
    out.threshold_loss = gate.threshold_loss;
  } else if (opt.groups > 1) {
    HierarchicalGate gate = hierarchical_gate(xg, w.w_gate, w.w_noise, w.w_gate2, w.w_noise2, opt.k, opt.k_secondary,
                                              noise, noise2, opt.noise_epsilon, training);
    routing = gate.routing;
    out.importance = gate.importance;
    out.load = gate.load;
  } else {
    TopKGate gate = noisy_top_k_gate(matmul(xg, w.w_gate), noise.enabled ? matmul(xg, w.w_noise) : Expr(), opt.k, noise,
                                     opt.noise_epsilon, training);
    routing = top_k_routing(gate);
    out.importance = expert_importance(routing, opt.experts);
    out.load = gate.load;
  }
  const bool several = comm && comm->world() > 1;
  if (expert_parallel(opt, comm)) {
    out.y = moe_dispatch_expert_parallel(x, routing, w.experts, opt.autoscale, *comm);
  } else {
    out.y = moe_dispatch(x, routing, w.experts, opt.autoscale);
  }
  out.routing = routing;
  if (training && several) {  // the balancing statistics of the global batch
    out.importance = dist::all_reduce_sum(*comm, out.importance);
    if (out.load.defined()) out.load = dist::all_reduce_sum(*comm, out.load);
  }
  if (training) {
    out.importance_loss = cv_squared(out.importance);
    if (out.load.defined()) out.load_loss = cv_squared(out.load);
  }
  return out;
}

namespace {
/// moe_layer on rows x [N, d] whose leading shape is `lead` (what the recorder reports).
Expr moe_rows(const Builder& b, const Expr& x, const MoeOptions& opt, const Shape& lead) {
  validate(opt);
  Graph& g = b.graph();
  const bool hier = opt.groups > 1 && opt.gating == MoeGating::noisy_topk;
  const int64_t d = opt.dim, n = opt.experts, first = hier ? opt.groups : opt.experts;
  MoeWeights w;
  // Gate parameters are f32 masters that the gates read in f32 (f64 in f64 graphs: gradient checks).
  const DType gate_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  auto gate_param = [&](const std::string& leaf, const Shape& shape, const Init& init) {
    return cast(b.param(leaf, shape, init), gate_dtype);
  };
  // W_g = W_noise = 0 (§3.5). The batchwise gate ranks rows per expert, so zeros would give every
  // expert the same rows: it starts from Glorot-uniform logits instead.
  w.w_gate = gate_param("gate.w", Shape{d, first},
                        opt.gating == MoeGating::batchwise ? Init::glorot_uniform() : Init::zeros());
  const bool noise_on = b.training() && opt.noisy && opt.gating == MoeGating::noisy_topk;
  const bool has_noise = opt.noisy && opt.gating == MoeGating::noisy_topk;  // declared in every mode (checkpoints)
  if (has_noise) w.w_noise = gate_param("gate.noise_w", Shape{d, first}, Init::zeros());
  if (hier) {
    const int64_t per = n / opt.groups;
    w.w_gate2 = gate_param("gate2.w", Shape{opt.groups, d, per}, Init::zeros());
    if (has_noise) w.w_noise2 = gate_param("gate2.noise_w", Shape{opt.groups, d, per}, Init::zeros());
  }
  if (opt.gating == MoeGating::batchwise) w.thresholds = gate_param(kThresholdLeaf, Shape{n}, Init::zeros());
  dist::Communicator* comm = b.context().comm;
  const bool local = expert_parallel(opt, comm);
  const int64_t held = local ? opt.experts_per_rank : n;  // this rank's experts
  const std::string group = local ? kLocalExpertGroup : "";
  for (int l = 0; l <= opt.hidden_layers; ++l) {
    const int64_t in = l == 0 ? d : opt.hidden, out = l == opt.hidden_layers ? d : opt.hidden;
    w.experts.layers.push_back(
        b.weight("expert.w" + std::to_string(l), Shape{held, in, out}, Init::glorot_uniform(), group));
    if (opt.expert_bias)
      w.experts.biases.push_back(b.weight("expert.b" + std::to_string(l), Shape{held, out}, Init::zeros(), group));
  }
  GateNoise noise{noise_on, g.seed(), noise_on ? g.next_rng_stream() : 0};
  GateNoise noise2{noise_on && hier, g.seed(), noise_on && hier ? g.next_rng_stream() : 0};
  MoeOutput out = moe_forward(x, w, opt, noise, noise2, b.training(), comm);
  if (b.training()) {
    if (opt.w_importance > 0 && opt.experts > 1)
      b.add_aux_loss("importance", scale(out.importance_loss, opt.w_importance));
    if (opt.w_load > 0 && opt.experts > 1 && out.load_loss.defined())
      b.add_aux_loss("load", scale(out.load_loss, opt.w_load));
    if (out.threshold_loss.defined()) b.add_aux_loss("batchwise_threshold", out.threshold_loss);
  } else if (GateRecorder* rec = b.context().recorder) {
    record_routing(*rec, b.prefix(), out.routing, opt, lead);
  }
  return out.y;
}
}  // namespace

Expr moe_layer(const Builder& b, const Expr& x, const MoeOptions& opt) {
  return moe_rows(b, x, opt, Shape{x.shape().rows()});
}

Expr moe_lm_block(const Builder& b, const Expr& x, const MoeOptions& opt, float dropout_p) {
  return x + dropout(sigmoid(moe_layer(b, x, opt)), dropout_p);
}

Expr moe_ffn(const Builder& b, const Expr& x, const MoeOptions& opt) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() == opt.dim, "moe ffn: input ", x.shape(), " must end in ",
            opt.dim, " features");
  Expr rows = reshape(x, {-1, opt.dim});
  std::vector<int64_t> lead = x.shape().vec();
  lead.pop_back();
  return reshape(moe_rows(b, rows, opt, Shape(lead)), x.shape());
}

}  // namespace moe
