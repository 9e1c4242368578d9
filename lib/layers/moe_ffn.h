// Sparsely-gated mixture-of-experts layer (Shazeer et al. 2017; docs/MODELS.md §3): y = sum_i G(x)_i E_i(x)
// with noisy top-k gating (flat or hierarchical, §3.2, §3.8) or strictly balanced batchwise gating
// (§3.10), ReLU experts d -> hidden -> d run through one grouped GEMM per layer, and the importance
// and load losses (§3.3-3.4) registered with Builder::add_aux_loss. Used as the Transformer FFN site
// "moe" and between the LSTMs of the 1B-word LMs (moe_lm_block). Covered by tests/layers/moe_ffn_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "layers/builder.h"
#include "layers/moe_ffn_dispatch.h"

namespace moe {

MOE_NAMED_ENUM(MoeGating, noisy_topk, batchwise)

struct MoeOptions {
  int64_t dim = 0;                           // model width d: input and output of every expert
  int experts = 4;                           // n, all experts (groups * experts per group when hierarchical)
  int k = 2;                                 // experts per token (the primary k when hierarchical)
  int64_t hidden = 1024;                     // expert hidden width
  int hidden_layers = 1;                     // ReLU hidden layers per expert (MoE-1-Deep: 4)
  float w_importance = 0.1f;                 // coefficient of CV(Importance)^2
  float w_load = 0.1f;                       // coefficient of CV(Load)^2
  bool noisy = true;                         // noisy top-k (noise only in training)
  float noise_epsilon = 0.01f;               // sigma = softplus(x W_noise) + noise_epsilon (t2t)
  int groups = 0;                            // > 1: hierarchical, `groups` groups of experts / groups experts
  int k_secondary = 2;                       // k inside a group (hierarchical)
  MoeGating gating = MoeGating::noisy_topk;  // batchwise: strictly balanced, learned thresholds at inference
  int batchwise_inference_k = 0;             // batchwise inference: cap on the experts above threshold (0: 2k)
  bool expert_bias = false;                  // biases in the expert layers (t2t: none)
  bool autoscale = true;                     // t2t: scale a layer by (in / d)^-1/2 when its input width != d
  int experts_per_rank = 0;  // > 0: expert parallelism, experts / experts_per_rank ranks (moe_ffn_expert_parallel.h)
};

/// Options from a YAML node (model.ffn of a recipe): type, experts, k, hidden, hidden_layers,
/// w_importance, w_load, noisy, noise_epsilon, groups, k_secondary, gating, batchwise_inference_k,
/// expert_bias, autoscale, experts_per_rank. Unknown keys are errors naming them; `hidden` defaults to default_hidden.
MoeOptions moe_options_from_yaml(const YAML::Node& node, int64_t dim, int64_t default_hidden);
/// Checks the options (sizes, k ranges, divisibility); errors name the option and value.
void validate(const MoeOptions& opt);

/// The layer's weights as expressions (moe_layer declares them as parameters; tests pass leaves).
struct MoeWeights {
  Expr w_gate, w_noise;    // [d, n] ([d, groups] when hierarchical), f32 (f64 for f64 inputs)
  Expr w_gate2, w_noise2;  // hierarchical: [groups, d, experts per group]
  Expr thresholds;         // batchwise: [n]
  ExpertWeights experts;   // [n, d, hidden], ..., [n, hidden, d] in x's dtype ([experts_per_rank, ...]: this rank's)
};

struct MoeOutput {
  Expr y;                           // [N, d]
  Expr importance, load;            // [n] (load undefined outside training / for batchwise)
  Expr importance_loss, load_loss;  // [] CV^2 values, unweighted (training only)
  Expr threshold_loss;              // [] batchwise training only
  Routing routing;                  // the (expert, token, gate) assignments
};

/// Whether `e` is a batchwise gate's thresholds T ("<site>.gate.thresholds"): trained by the threshold loss
/// alone, they take no part in the model's loss, so moe-train steps them outside the gradient norm that
/// it logs and clips (Optimizer::set_unclipped; docs/MODELS.md §3.10).
bool is_batchwise_threshold(const ParamEntry& e);

/// Whether the layer runs expert-parallel: experts_per_rank > 0 and `comm` has several ranks; then
/// experts_per_rank * ranks must equal experts.
bool expert_parallel(const MoeOptions& opt, dist::Communicator* comm);

/// The layer on explicit weights; `noise` / `noise2` drive the primary / secondary gate noise
/// (fixed seeds make it deterministic); `training` selects batchwise mode and computes the losses;
/// `comm` (several ranks): the balancing statistics of the global batch, and expert parallelism.
MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const GateNoise& noise,
                      const GateNoise& noise2, bool training, dist::Communicator* comm = nullptr);

/// The MoE layer on token rows x [N, d] -> [N, d] (any compute dtype; gating runs in f32).
/// In training mode it adds the aux losses "<prefix>.importance" and "<prefix>.load" (and
/// "<prefix>.batchwise_threshold" for batchwise gating) to the builder. Inference graphs report the
/// routing to the builder's gate recorder (layers/gate_recorder.h; family moe), one row per token.
Expr moe_layer(const Builder& b, const Expr& x, const MoeOptions& opt);
/// The 1B-word LM block around it (§3.9): x + dropout(sigmoid(moe_layer(x)), p).
Expr moe_lm_block(const Builder& b, const Expr& x, const MoeOptions& opt, float dropout_p);
/// The Transformer FFN site: x [..., d] flattened to rows, moe_layer, reshaped back (recorded as [..., n]).
Expr moe_ffn(const Builder& b, const Expr& x, const MoeOptions& opt);

}  // namespace moe
