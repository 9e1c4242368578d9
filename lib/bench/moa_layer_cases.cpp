// layer.moa: forward + backward of a mixture-of-attention-heads self-attention layer (lib/layers/moa.h,
// 8K8E128D: k = E = 8 experts of head size D = 128, the dense dispatch) against standard 8-head
// self-attention (lib/layers/attention_layer.h), d 512, 256 sentences x 64 tokens, no mask.
// Model FLOPs per step (N = B*T tokens; linear maps 3x their forward, attention from attention_flops):
//   mha: 3 * 4 * 2*N*d*d (q, k, v, o) + attention(B, H, T, T, d/H) fwd + bwd
//   moa: 3 * 2*N*D*d*(2k + 2) (k query and k output maps per token, shared k and v) + 3 * 2*N*d*E (router)
//        + attention(B, k, T, T, D) fwd + bwd
// The moa row's ratio is its time over the standard layer's. Timed with time_layer (layer_step.h).
// Covered by tests/bench/bench_test.cpp.
#include <string>

#include "bench/cases.h"
#include "bench/layer_step.h"
#include "layers/attention_layer.h"
#include "layers/moa.h"

namespace moe::bench {
namespace {
struct Sizes {
  int64_t B, T, d, D;
};

void moa_case(BenchContext& ctx) {
  const Sizes s = ctx.pick(Sizes{256, 64, 512, 128}, Sizes{16, 32, 128, 32}, Sizes{2, 8, 32, 8});
  const int heads = 8;
  const Tensor x = ctx.random(Shape{s.B, s.T, s.d}), dy = ctx.random(Shape{s.B, s.T, s.d});
  const double n = double(s.B * s.T), d = double(s.d);
  const Row mha = emit_mha_baseline(ctx, x, dy, heads);
  MoaOptions o;
  o.k = heads;
  o.experts = heads;
  o.head_dim = s.D;
  Row r{.label = "moa." + o.name(),
        .shape = mha.shape,
        .timing = time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) {
          return moa_attention_layer(b.sub("moa"), AttentionInput{.x = in, .memory = in}, s.d, o);
        })};
  r.flops = 3 * 2 * n * double(s.D) * d * (2 * o.k + 2) + 3 * 2 * n * d * o.experts +
            attention_fwd_bwd_flops(s.B, o.k, s.T, s.D);
  r.ratio = r.timing.median_ms / mha.timing.median_ms;
  r.baseline = mha.label;
  ctx.emit(r);
}
}  // namespace

std::vector<Case> moa_layer_cases() {
  return {
      {"layer.moa", "MoA 8K8E128D self-attention layer fwd+bwd vs 8-head attention, 256 x 64 tokens, d 512", moa_case}};
}

}  // namespace moe::bench
