// layer_step.h implementation. Covered by tests/bench/bench_test.cpp.
#include "bench/layer_step.h"

#include "graph/graph.h"

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

}  // namespace moe::bench
