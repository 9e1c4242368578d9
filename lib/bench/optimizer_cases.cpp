// Optimizer case: one fused Adam step (lib/ops/optimizer.h) over P f32 parameters (60M on a GPU, a
// transformer-big-sized model), beta 0.9 / 0.98, eps 1e-9, no weight decay, a new step number each call.
// Bytes per call: read param, grad, m, v and write param, m, v = 7 * 4 * P. Covered by
// tests/bench/bench_test.cpp.
#include "bench/cases.h"
#include "ops/optimizer.h"

namespace moe::bench {
namespace {
void adam_case(BenchContext& ctx) {
  const int64_t p = ctx.pick<int64_t>(60'000'000, 4'000'000, 1000);
  const Shape s{p};
  const Tensor param = ctx.random(s, DType::f32), grad = ctx.random(s, DType::f32, -1e-2, 1e-2),
               m = ctx.random(s, DType::f32, -1e-3, 1e-3), v = ctx.random(s, DType::f32, 0, 1e-5);
  int64_t step = 0;
  ctx.emit({.label = "step",
            .shape = shape_text(s),
            .dtype = "f32",
            .timing = ctx.time([&] { adam_update(param, grad, m, v, 1e-4f, 0.9f, 0.98f, 1e-9f, 0.f, false, ++step); }),
            .bytes = 7.0 * 4.0 * double(p)});
}
}  // namespace

std::vector<Case> optimizer_cases() { return {{"adam", "fused Adam step over 60M f32 parameters", adam_case}}; }

}  // namespace moe::bench
