// MAE: mixture of attentive experts (Peng et al. 2020; docs/MODELS.md §0, §1). An attention site is
// a mixture of E experts built from its h heads: MAE-(h-1) expert j drops head j (E = h), MAE-(h-2)
// expert {i,j} drops a pair (E = C(h,2)); an input-dependent gate g weights them. Never run as E
// attentions: with head contexts H~_l (before W^O) the mixture is one MHA with per-head weights
//   MAE-(h-1): w_j = h/(h-1) (1 - g_j);  MAE-(h-2): w_l = h/(h-2) (1 - sum_{p ∋ l} g_p)
// i.e. w = c (1 - q P), P [E, h] the heads each expert drops, c = h/(h - dropped); b^O is unscaled.
// Gate (per site, group "gate"): u -> BatchNorm (running statistics as store state; per-role
// gate_norm: batch, running or none, mae_gate.cpp) -> tanh MLP (gate_hidden) -> dropout(gate_dropout)
// -> linear to E -> softmax; u by the site's gate-input policy (mae_gate_input.h). Expert weights q by
// the graph's BuildContext::experts: mixture (q = g; training's G and joint passes, where gradients reach
// everything and the update schedule steps the gates or all, and inference by default), sample (the F
// pass: one expert drawn per sentence, or per position for per-position gates, from the gate computed
// without gradient: q = one-hot), argmax (inference: q = one-hot of the most-weighted expert, ties to
// the lowest index).
// gate: uniform (UNI-MAE) declares no gate: mixture = plain MHA, F draws uniformly.
// Covered by tests/layers/mae_test.cpp, mae_model_test.cpp and mae_causality_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "layers/attention_layer.h"
#include "layers/sites.h"

namespace moe {

MOE_NAMED_ENUM(MaeGate, learned, uniform)  // uniform: UNI-MAE, no gate parameters
MOE_NAMED_ENUM(MaeTraining, bcd, joint)    // bcd: MAE's G and F updates; joint: NOBCD (training/mae_schedule.h)
/// What a site's gate reads (mae_gate_input.h).
MOE_NAMED_ENUM(GateInput, full_mean, causal_prefix_mean, causal_window_mean, source_mean)
/// How a gate normalises its input in training (mae_gate.cpp).
MOE_NAMED_ENUM(GateNorm, batch, running, none)

struct MaeOptions {
  int heads = 8;    // h (model.heads)
  int dropped = 1;  // heads an expert drops: 1 = MAE-(h-1) ("experts: h-1"), 2 = MAE-(h-2)
  MaeGate gate = MaeGate::learned;
  MaeTraining training = MaeTraining::bcd;
  int64_t gate_hidden = 256;                 // tanh units of the gate MLP
  float gate_dropout = 0.1f;                 // after the tanh
  int64_t gate_window = 100;                 // W of causal_window_mean
  std::map<SiteRole, GateInput> gate_input;  // per role
  std::map<SiteRole, GateNorm> gate_norm;    // per role

  /// The gate_input and gate_norm preset of a model.attention that names none.
  static constexpr const char* kDefaultPreset = "leak_free";

  /// model.attention (type mae): name ("MAE-7", "MAE-6", "UNI-MAE-7", "NOBCD-7"; the number is
  /// h-1 or h-2), experts (h-1 | h-2), gate, training, gate_hidden, gate_dropout, gate_window,
  /// gate_input (one of the presets "leak_free" — encoder full_mean, decoder causal_prefix_mean,
  /// LM causal_window_mean (docs/MODELS.md §1.4), the default — and "paper" — full_mean at every MT site,
  /// causal_window_mean at LM sites (Appendix A): its decoder gates see the whole target in
  /// teacher-forced graphs, which decoding cannot; or a map role -> policy over the default preset).
  /// gate_norm: how a gate normalises its input in training (batch: BatchNorm with the batch's
  /// statistics, the paper's, which couple every row of the batch, so in training a later token moves
  /// the gates of earlier positions; running: the running statistics, updated from the batch after
  /// use, as in inference; none: no normalisation), one value for every site, the preset leak_free
  /// (the default: encoder_self batch — a source sentence is seen whole anyway — and running at the
  /// causal sites decoder_self, decoder_cross, lm_self), or a map role -> value over leak_free.
  /// Unknown keys and inconsistent values are errors naming them.
  static MaeOptions from_yaml(const YAML::Node& node, int heads);
  /// Writes the default presets into a model.attention node of type mae without gate_input or
  /// gate_norm, and completes a partial map from them, so that the architecture a checkpoint stores
  /// names the gate inputs and norms it was trained with whatever later defaults become. Other nodes
  /// stay as they are.
  static void pin_gate_input(YAML::Node& attention);
  int experts() const { return dropped == 1 ? heads : heads * (heads - 1) / 2; }
  /// "MAE-7", "UNI-MAE-6", "NOBCD-7".
  std::string name() const;
  GateInput policy(SiteRole role) const { return gate_input.at(role); }
  GateNorm norm(SiteRole role) const { return gate_norm.at(role); }
};

/// One gate's weights in the gate dtype (f32; f64 in f64 graphs); the running statistics are the
/// f32 store state "gate.bn.mean" / "gate.bn.var" (undefined: batch statistics only).
struct MaeGateWeights {
  Expr bn_gamma, bn_beta, w1, b1, w2, b2;
  Expr running_mean, running_var;
};

/// Declares the gate of the site under `b` ("gate.bn.g", "gate.bn.b", "gate.l1.w", ... in group "gate";
/// with norm none no "gate.bn.*").
MaeGateWeights mae_gate_weights(const Builder& b, int64_t dim, const MaeOptions& o, GateNorm norm);
/// Gate probabilities [N, E] for gate inputs u [N, d] (gate dtype) with the gate norm `norm`
/// (MaeOptions::norm). training: dropout, and for batch the BN batch statistics (running statistics
/// updated; with one row the running statistics are used), for running the running statistics
/// (then updated from the batch, without gradient). Inference: the running statistics (none: no BN).
Expr mae_gate_probs(const Expr& u, const MaeGateWeights& w, const MaeOptions& o, GateNorm norm, bool training);
/// Per-head weights w = c (1 - q P) [N, h] from expert weights q [N, E] (mixture or one-hot).
Expr mae_head_weights(const Expr& q, const MaeOptions& o);
/// One-hot [N, E] (q's dtype) of the experts idx (i32 [N, 1]).
Expr mae_one_hot(const Expr& idx, int64_t experts, DType dtype);

/// The MAE attention site: MHA (q/k/v/o as multi_head_attention, same parameter names) with the
/// per-head weights of b.context().experts (see the file comment). role picks the gate-input policy.
Expr mae_attention_layer(const Builder& b, const AttentionInput& in, int64_t dim, const MaeOptions& o, SiteRole role);

}  // namespace moe
