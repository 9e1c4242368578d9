// layer_step.h implementation. Covered by tests/bench/bench_test.cpp.
#include "bench/layer_step.h"

#include "graph/graph.h"
#include "layers/attention_layer.h"
#include "ops/attention.h"

namespace moe::bench {

Timing time_layer(BenchContext& ctx, const Tensor& x, const Tensor& dy, const LayerFn& build) {
  ParameterStore store(ctx.device(), 1);
  uint64_t step = 0;
  return ctx.time([&] {
    Graph g(ctx.device(), &store,
            GraphOptions{.training = true, .compute_dtype = ctx.dtype(), .seed = 1, .step = step++});
    const Builder b(g);
    const Expr y = build(b, g.input(x, true));
    g.backward_from(y, dy);
  });
}

double attention_fwd_bwd_flops(int64_t B, int64_t H, int64_t T, int64_t D) {
  return attention_flops(B, H, T, T, D, false, false) + attention_flops(B, H, T, T, D, false, true);
}

Row emit_mha_baseline(BenchContext& ctx, const Tensor& x, const Tensor& dy, int heads) {
  const int64_t B = x.shape()[0], T = x.shape()[1], d = x.shape()[2];
  const double n = double(B * T);
  Row r{.label = "mha.h" + std::to_string(heads),
        .shape = shape_text(x.shape()),
        .timing = time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) {
          return multi_head_attention(b.sub("mha"), AttentionInput{.x = in, .memory = in}, d, heads);
        })};
  r.flops = 3 * 4 * 2 * n * double(d) * double(d) + attention_fwd_bwd_flops(B, heads, T, d / heads);
  ctx.emit(r);
  return r;
}

}  // namespace moe::bench
