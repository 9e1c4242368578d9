// The MAE attention site (mae.h): q/k/v projections and the output projection of multi-head
// attention, with the per-head weights w of the graph's expert choice (BuildContext::experts):
//   mixture (G, joint, inference):  q = g                         (gradients reach the gate)
//   sample (F):                     q = one-hot(s), s ~ Cat(g)    (g without gradient; per sentence,
//                                   or per position for per-position gates; Philox stream keyed by
//                                   the graph's seed, its step and the site name)
//   argmax (inference option):      q = one-hot(argmax g)
// A uniform gate (UNI-MAE) has g = 1/E per sentence: its mixture is plain MHA (no weights at all).
// Covered by tests/layers/mae_test.cpp and tests/layers/mae_model_test.cpp.
#include "layers/mae.h"

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/categorical.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/topk.h"
#include "layers/gate_recorder.h"
#include "layers/mae_gate_input.h"

namespace moe {

namespace {
/// The F-step stream of a site: FNV-1a of its name, mixed with the graph's step.
uint64_t sample_stream(const Builder& b) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : "mae.sample:" + b.prefix()) h = (h ^ c) * 1099511628211ull;
  return h ^ ((b.graph().options().step + 1) * 0x9E3779B97F4A7C15ull);
}

/// Expert weights q [N, E] for gate probabilities `probs` [N, E] in mode m.
Expr expert_weights(const Builder& b, const Expr& probs, ExpertChoice m) {
  if (m == ExpertChoice::mixture) return probs;
  const int64_t e = probs.shape()[1];
  Expr idx = m == ExpertChoice::sample ? categorical_sample(probs, b.graph().seed(), sample_stream(b))
                                       : topk(probs, 1).indices;
  return mae_one_hot(idx, e, probs.dtype());
}
}  // namespace

Expr mae_attention_layer(const Builder& b, const AttentionInput& in, int64_t dim, const MaeOptions& o, SiteRole role) {
  const Heads heads = project_heads(b, in, dim, o.heads, o.heads);
  const ExpertChoice m = b.context().experts;
  const GateInput policy = o.policy(role);
  const Shape& s = in.x.shape();
  const int64_t bsz = s[0], t = s[1], e = o.experts();
  const DType gate_dtype = b.dtype() == DType::f64 ? DType::f64 : DType::f32;
  GateRecorder* recorder = b.training() ? nullptr : b.context().recorder;
  Graph& g = b.graph();
  Expr probs;
  bool per_position = false;
  if (o.gate == MaeGate::uniform) {
    if (recorder || m != ExpertChoice::mixture)
      probs = add_scalar(g.input(Tensor::zeros(Shape{bsz, e}, gate_dtype, g.device())), 1.f / static_cast<float>(e));
    if (recorder) recorder->record(b.prefix(), probs.val(), Tensor(), "uniform");
    if (m == ExpertChoice::mixture) return attend_and_project(b, in, heads, dim);  // plain MHA, exactly
  } else {
    const MaeGateInput gi = mae_gate_input(in, policy, o.gate_window, gate_dtype);
    per_position = gi.per_position;
    probs = mae_gate_probs(gi.u, mae_gate_weights(b, dim, o, o.norm(role)), o, o.norm(role), b.training());
    if (m == ExpertChoice::sample) probs = stop_gradient(probs);
    if (recorder)
      recorder->record(b.prefix(), per_position ? probs.val().view(Shape{bsz, t, e}) : probs.val(),
                       per_position ? in.query_padding : Tensor(), enum_name(policy));
  }
  Expr w = cast(mae_head_weights(expert_weights(b, probs, m), o), b.dtype());
  w = per_position ? reshape(w, {bsz, t, o.heads}) : w;
  return attend_and_project(b, in, heads, dim, w);
}

}  // namespace moe
