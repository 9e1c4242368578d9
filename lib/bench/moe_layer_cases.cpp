// layer.moe_ffn: forward + backward of a whole sparsely-gated MoE FFN layer (lib/layers/moe_ffn.h:
// noisy top-2 gating, ReLU experts d -> h -> d through the grouped GEMM, importance and load losses
// built) on 16384 random tokens, d 512, expert hidden 2048, with 8 and 32 experts, against a dense FFN
// of the same active FLOPs (lib/layers/basic.h feed_forward, d -> k*h = 4096 -> d, ReLU, with biases);
// then every other registered router (layers/builtin_routers.cpp) with its keys at their defaults, 8
// experts, k 2 (expert choice: two per token on average), rows "moe.<router>.e8.k2.h<h>" of the same FLOPs.
// Model FLOPs per step (GEMMs only; backward = 2x forward):
//   dense: 3 * 2 * N * (d*H + H*d) = 12*N*d*H
//   moe:   12*N*k*d*h (experts) + 12*N*d*E (the gate and noise projections)
// The moe rows' ratio is their time over the dense FFN's. Timed with time_layer (layer_step.h).
// Covered by tests/bench/bench_test.cpp.
#include <string>

#include "bench/cases.h"
#include "bench/layer_step.h"
#include "layers/basic.h"
#include "layers/moe_ffn.h"

namespace moe::bench {
namespace {
struct Sizes {
  int64_t tokens, d, h;
};

void moe_ffn_case(BenchContext& ctx) {
  const Sizes s = ctx.pick(Sizes{16384, 512, 2048}, Sizes{1024, 128, 512}, Sizes{32, 16, 32});
  const int k = 2;
  const int64_t dense_hidden = k * s.h;
  const Tensor x = ctx.random(Shape{s.tokens, s.d}), dy = ctx.random(Shape{s.tokens, s.d});
  const double n = double(s.tokens), d = double(s.d);
  const std::string shape = shape_text(x.shape());
  const Timing dense = time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) {
    return feed_forward(b.sub("ffn"), in, s.d, dense_hidden, Activation::relu, 0.f);
  });
  const std::string dense_label = "dense_ffn.h" + std::to_string(dense_hidden);
  ctx.emit({.label = dense_label, .shape = shape, .timing = dense, .flops = 12 * n * d * double(dense_hidden)});
  for (int experts : {8, 32}) {
    MoeOptions o;
    o.dim = s.d;
    o.experts = experts;
    o.k = k;
    o.hidden = s.h;
    Row r{.label = "moe.e" + std::to_string(experts) + ".k2.h" + std::to_string(s.h),
          .shape = shape,
          .timing =
              time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) { return moe_layer(b.sub("moe"), in, o); })};
    r.flops = 12 * n * k * d * double(s.h) + 12 * n * d * experts;
    r.ratio = r.timing.median_ms / dense.median_ms;
    r.baseline = dense_label;
    ctx.emit(r);
  }
  for (const RouterFamily& f : RouterRegistry::instance().families()) {
    if (f.name == "noisy_topk") continue;  // the rows above
    MoeOptions o;
    o.dim = s.d;
    o.experts = 8;
    o.k = k;
    o.hidden = s.h;
    o.router = moe_router(f.name);
    Row r{.label = "moe." + f.name + ".e8.k2.h" + std::to_string(s.h),
          .shape = shape,
          .timing =
              time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) { return moe_layer(b.sub("moe"), in, o); })};
    r.flops = 12 * n * k * d * double(s.h) + 12 * n * d * 8;
    r.ratio = r.timing.median_ms / dense.median_ms;
    r.baseline = dense_label;
    ctx.emit(r);
  }
}
}  // namespace

std::vector<Case> moe_layer_cases() {
  return {{"layer.moe_ffn",
           "MoE FFN layer (top-2 of 8 and 32 experts; each registered router) fwd+bwd vs a dense FFN of equal active "
           "FLOPs",
           moe_ffn_case}};
}

}  // namespace moe::bench
