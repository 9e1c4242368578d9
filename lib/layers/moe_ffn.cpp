// moe_ffn.h implementation (options: moe_options.cpp; routers: moe_router*.cpp): the layer on explicit
// weights (route, capacity, dispatch, shared experts, losses), and the builder front ends (parameters,
// noise streams, aux losses, the gate recorder). Covered by tests/layers/moe_ffn_test.cpp and
// tests/layers/moe_router_test.cpp.
#include "layers/moe_ffn.h"

#include <string_view>

#include "dist/collective_exprs.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/dropout.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/unary.h"
#include "layers/gate_recorder.h"
#include "layers/moe_capacity.h"
#include "layers/moe_ffn_expert_parallel.h"

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
/// The router's weights: `w.router` with the paper's named fields joined in.
RouterWeights router_weights(const MoeWeights& w) {
  RouterWeights r = w.router;
  const std::pair<const char*, const Expr*> named[] = {{"gate.w", &w.w_gate},
                                                       {"gate.noise_w", &w.w_noise},
                                                       {"gate2.w", &w.w_gate2},
                                                       {"gate2.noise_w", &w.w_noise2},
                                                       {kThresholdLeaf, &w.thresholds}};
  for (const auto& [leaf, e] : named)
    if (e->defined()) r[leaf] = *e;
  return r;
}

/// Every token's shared experts: `shared` assignments per token, weight 1.
Expr shared_experts(const Expr& x, const ExpertWeights& shared, bool autoscale) {
  Graph& g = x.graph();
  const int64_t s = shared.layers[0].shape()[0], rows = x.shape()[0];
  std::vector<int32_t> ids(static_cast<size_t>(rows * s));
  for (size_t a = 0; a < ids.size(); ++a) ids[a] = static_cast<int32_t>(a % static_cast<size_t>(s));
  const Expr ones = scale(g.input(Tensor::zeros(Shape{rows * s, 1}, DType::f32, g.device())), 0.f, 1.f);
  return moe_dispatch(x, Routing{g.input(Tensor::from_vector(ids, Shape{rows * s})), ones, Expr(), s}, shared,
                      autoscale);
}
}  // namespace

MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const RouterContext& ctx) {
  MOE_CHECK(x.shape().ndim() == 2 && x.shape()[1] == opt.dim, "moe: input ", x.shape(), " must be [tokens, ", opt.dim,
            "]");
  const DType gate_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const bool training = ctx.training;
  RouterResult r = opt.router->route(cast(x, gate_dtype), router_weights(w), opt, ctx);
  MoeOutput out;
  out.routing = r.routing;
  out.importance = r.importance;
  out.load = r.load;
  dist::Communicator* comm = ctx.comm;
  const bool several = comm && comm->world() > 1, local = expert_parallel(opt, comm);
  const float factor = training ? opt.capacity_factor : opt.eval_capacity_factor;
  if (factor > 0) {
    out.capacity = token_capacity(factor, x.shape()[0], r.routing.per_token, opt.experts);
    out.y = moe_dispatch_capacity(x, r.routing, opt.experts, out.capacity, w.experts, opt.autoscale,
                                  local ? comm : nullptr);
  } else if (local) {
    out.y = moe_dispatch_expert_parallel(x, r.routing, w.experts, opt.autoscale, *comm);
  } else {
    out.y = moe_dispatch(x, r.routing, w.experts, opt.autoscale);
  }
  if (!w.shared.layers.empty()) out.y = out.y + shared_experts(x, w.shared, opt.autoscale);
  if (training && several) {  // the balancing statistics of the global batch
    if (out.importance.defined()) out.importance = dist::all_reduce_sum(*comm, out.importance);
    if (out.load.defined()) out.load = dist::all_reduce_sum(*comm, out.load);
  }
  if (training) {
    if (out.importance.defined()) out.importance_loss = cv_squared(out.importance);
    if (out.load.defined()) out.load_loss = cv_squared(out.load);
    if (opt.z_loss > 0)
      for (const Expr& l : r.logits) {
        const Expr z = mean_all(square(logsumexp(l, 1)));
        out.z_loss = out.z_loss.defined() ? out.z_loss + z : z;
      }
    out.losses = r.losses;
    for (const AuxTerm& t : r.losses) out.router_loss = out.router_loss.defined() ? out.router_loss + t.value : t.value;
  }
  return out;
}

MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const GateNoise& noise,
                      const GateNoise& noise2, bool training, dist::Communicator* comm) {
  RouterContext ctx;
  ctx.training = training;
  ctx.noise = noise;
  ctx.noise2 = noise2;
  ctx.lead = Shape{x.shape().ndim() >= 1 ? x.shape()[0] : 0};
  ctx.comm = comm;
  return moe_forward(x, w, opt, ctx);
}

namespace {
/// Reports the routing of `rows` tokens (leading shape `lead`) to the recorder (family moe), with the
/// token capacity it applied or, at inference without one, what training's capacity would drop.
void record_routing(GateRecorder& rec, const std::string& site, const MoeOutput& out, const MoeOptions& opt,
                    const Shape& lead) {
  const Routing& r = out.routing;
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
  g.policy = opt.router->policy(opt);
  g.max_per_token = opt.router->traits(opt).max_per_token;
  const double factor = out.capacity > 0 ? opt.eval_capacity_factor : opt.capacity_factor;
  if (factor > 0 && opt.router->traits(opt).token_choice) {
    CapacityRecord& c = g.capacity;
    c.factor = factor;
    c.applied = out.capacity > 0;
    c.capacity = c.applied ? out.capacity : token_capacity(factor, lead.numel(), r.per_token, opt.experts);
    const CapacityCount n = count_capacity(expert, opt.experts, c.capacity);
    c.pairs = n.pairs, c.dropped = n.dropped, c.kept = n.kept, c.slots = n.slots;
  }
  rec.record(site, std::move(g));
}

/// moe_layer on rows x [N, d] whose leading shape is `lead` (what the recorder reports).
Expr moe_rows(const Builder& b, const Expr& x, const MoeOptions& opt, const Shape& lead, const Tensor& padding) {
  validate(opt);
  Graph& g = b.graph();
  const int64_t d = opt.dim;
  // Gate parameters are f32 masters that the gates read in f32 (f64 in f64 graphs: gradient checks).
  const DType gate_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  MoeWeights w;
  w.router = opt.router->declare(b, opt, gate_dtype);
  dist::Communicator* comm = b.context().comm;
  const bool local = expert_parallel(opt, comm);
  const int64_t held = local ? opt.experts_per_rank : opt.experts;  // this rank's experts
  const std::string group = local ? kLocalExpertGroup : "";
  auto experts = [&](const std::string& name, int64_t count, int64_t hidden, const std::string& in_group) {
    ExpertWeights e;
    for (int l = 0; l <= opt.hidden_layers; ++l) {
      const int64_t in = l == 0 ? d : hidden, out = l == opt.hidden_layers ? d : hidden;
      e.layers.push_back(
          b.weight(name + ".w" + std::to_string(l), Shape{count, in, out}, Init::glorot_uniform(), in_group));
      if (opt.expert_bias)
        e.biases.push_back(b.weight(name + ".b" + std::to_string(l), Shape{count, out}, Init::zeros(), in_group));
    }
    return e;
  };
  w.experts = experts("expert", held, opt.hidden, group);
  if (opt.shared > 0)
    w.shared = experts("shared", opt.shared, opt.shared_hidden > 0 ? opt.shared_hidden : opt.hidden, "");
  RouterContext ctx;
  ctx.training = b.training();
  ctx.lead = lead;
  ctx.padding = padding;
  ctx.comm = comm;
  opt.router->draw_noise(g, opt, b.training(), ctx);
  MoeOutput out = moe_forward(x, w, opt, ctx);
  if (b.training()) {
    if (opt.w_importance > 0 && opt.experts > 1 && out.importance_loss.defined())
      b.add_aux_loss("importance", scale(out.importance_loss, opt.w_importance));
    if (opt.w_load > 0 && opt.experts > 1 && out.load_loss.defined())
      b.add_aux_loss("load", scale(out.load_loss, opt.w_load));
    for (const AuxTerm& t : out.losses) b.add_aux_loss(t.leaf, t.value);
    if (out.z_loss.defined()) b.add_aux_loss("z_loss", scale(out.z_loss, opt.z_loss));
  } else if (GateRecorder* rec = b.context().recorder) {
    record_routing(*rec, b.prefix(), out, opt, lead);
  }
  return out.y;
}
}  // namespace

Expr moe_layer(const Builder& b, const Expr& x, const MoeOptions& opt) {
  return moe_rows(b, x, opt, Shape{x.shape().rows()}, Tensor());
}

Expr moe_lm_block(const Builder& b, const Expr& x, const MoeOptions& opt, float dropout_p) {
  return x + dropout(sigmoid(moe_layer(b, x, opt)), dropout_p);
}

Expr moe_ffn(const Builder& b, const Expr& x, const MoeOptions& opt, const Tensor& padding) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() == opt.dim, "moe ffn: input ", x.shape(), " must end in ",
            opt.dim, " features");
  Expr rows = reshape(x, {-1, opt.dim});
  std::vector<int64_t> lead = x.shape().vec();
  lead.pop_back();
  MOE_CHECK(!padding.defined() || padding.shape() == Shape(lead), "moe ffn: padding ",
            padding.defined() ? padding.shape() : Shape{}, " must be the rows' leading shape ", Shape(lead));
  return reshape(moe_rows(b, rows, opt, Shape(lead), padding), x.shape());
}

}  // namespace moe
