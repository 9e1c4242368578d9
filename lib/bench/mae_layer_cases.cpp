// layer.mae: forward + backward of an MAE-7 self-attention site (lib/layers/mae.h: 8 heads, a learned
// gate per site on the sentence mean, per-head weights into the fused attention) against standard
// 8-head self-attention, d 512, 256 sentences x 64 tokens, no mask, in the two training passes of
// block coordinate descent: G (the full mixture, gradients to the gate too) and F (one expert drawn
// per sentence, gate without gradient). The target (issue 5): at most 1.1x the standard layer.
// Model FLOPs: the attention layer's (emit_mha_baseline) plus the gate, 3 * 2*B*(d*256 + 256*E) (tiny).
// Covered by tests/bench/bench_test.cpp.
#include <string>

#include "bench/cases.h"
#include "bench/layer_step.h"
#include "layers/mae.h"

namespace moe::bench {
namespace {
struct Sizes {
  int64_t B, T, d;
};

void mae_case(BenchContext& ctx) {
  const Sizes s = ctx.pick(Sizes{256, 64, 512}, Sizes{16, 32, 128}, Sizes{2, 8, 32});
  const int heads = 8;
  const Tensor x = ctx.random(Shape{s.B, s.T, s.d}), dy = ctx.random(Shape{s.B, s.T, s.d});
  const Row mha = emit_mha_baseline(ctx, x, dy, heads);
  const MaeOptions o = MaeOptions::from_yaml(YAML::Load("{type: mae, name: MAE-7}"), heads);
  const double gate_flops = 3 * 2 * double(s.B) * double(s.d * o.gate_hidden + o.gate_hidden * o.experts());
  for (const auto& [step, experts] : {std::pair{"G", ExpertChoice::mixture}, std::pair{"F", ExpertChoice::sample}}) {
    Row r{.label = o.name() + "." + step,
          .shape = mha.shape,
          .timing = time_layer(ctx, x, dy, [&](const Builder& b, const Expr& in) {
            b.context().experts = experts;
            return mae_attention_layer(b.sub("mae"), AttentionInput{.x = in, .memory = in}, s.d, o,
                                       SiteRole::encoder_self);
          })};
    r.flops = mha.flops + gate_flops;
    r.ratio = r.timing.median_ms / mha.timing.median_ms;
    r.baseline = mha.label;
    ctx.emit(r);
  }
}
}  // namespace

std::vector<Case> mae_layer_cases() {
  return {{"layer.mae",
           "MAE-7 self-attention layer fwd+bwd (G and F passes) vs 8-head attention, 256 x 64 tokens, d 512",
           mae_case}};
}

}  // namespace moe::bench
