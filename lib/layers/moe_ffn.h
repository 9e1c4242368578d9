// Sparsely-gated mixture-of-experts layer (Shazeer et al. 2017; docs/MODELS.md §3): y = sum_i G(x)_i E_i(x),
// G from a registered router (moe_router.h; the paper's noisy top-k, flat or hierarchical, its strictly
// balanced batchwise gating and the routers after it: layers/builtin_routers.cpp, docs/MODELS.md §3.12-3.17),
// ReLU experts d -> hidden -> d run through one grouped GEMM per layer. Around the router, for any of them:
// a token capacity (capacity_factor, moe_capacity.h: tokens over it pass through the residual), shared
// experts every token uses (`shared`, DeepSeekMoE), the router z-loss (ST-MoE), the 2017 importance and
// load losses where the router gives their statistics, and expert parallelism over the build context's
// communicator. Used as the feed-forward site "moe" (moe_ffn_site.cpp; `moe_every` places it in every k-th
// layer) and between the LSTMs of the 1B-word LMs (moe_lm_block). Covered by tests/layers/moe_ffn_test.cpp,
// moe_batchwise_test.cpp, moe_router_test.cpp and moe_capacity_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "layers/builder.h"
#include "layers/moe_ffn_dispatch.h"
#include "layers/moe_router.h"

namespace moe {

struct MoeOptions {
  int64_t dim = 0;              // model width d: input and output of every expert
  int experts = 4;              // n, all routed experts (groups * experts per group when hierarchical)
  int k = 2;                    // experts per token (the primary k when hierarchical; expert choice: on average)
  int64_t hidden = 1024;        // expert hidden width
  int hidden_layers = 1;        // ReLU hidden layers per expert (MoE-1-Deep: 4)
  float w_importance = 0.1f;    // coefficient of CV(Importance)^2 (routers that give it: noisy_topk, batchwise)
  float w_load = 0.1f;          // coefficient of CV(Load)^2 (noisy_topk)
  bool noisy = true;            // noisy top-k (noise only in training)
  float noise_epsilon = 0.01f;  // sigma = softplus(x W_noise) + noise_epsilon (t2t)
  int groups = 0;               // > 1: hierarchical, `groups` groups of experts / groups experts
  int k_secondary = 2;          // k inside a group (hierarchical)
  std::shared_ptr<const MoeRouter> router = moe_router("noisy_topk");  // model.ffn.gating, with its own keys
  /// gating as a map by FfnRole ({encoder: expert_choice, decoder: switch}): the routers of those roles
  /// (the others use `router`, the encoder's when the map names it).
  std::map<FfnRole, std::shared_ptr<const MoeRouter>> role_routers;
  int batchwise_inference_k = 0;   // batchwise inference: cap on the experts above threshold (0: 2k)
  bool expert_bias = false;        // biases in the expert layers (t2t: none)
  bool autoscale = true;           // t2t: scale a layer by (in / d)^-1/2 when its input width != d
  int experts_per_rank = 0;        // > 0: expert parallelism, experts / experts_per_rank ranks
  float capacity_factor = 0;       // > 0: training's token capacity C = ceil(f * rows * k / n) per expert
  float eval_capacity_factor = 0;  // the same in inference graphs (0: none, every token keeps its experts)
  float z_loss = 0;                // coefficient of the router z-loss mean_x (log sum_i exp l_i(x))^2
  int shared = 0;                  // shared experts every token uses besides its routed ones (DeepSeekMoE)
  int64_t shared_hidden = 0;       // their hidden width (0: hidden)
  int moe_every = 1;               // a layer stack: MoE in layers l with (l + 1) % moe_every == 0, dense elsewhere
};

/// Options from a YAML node (model.ffn of a recipe, model.moe of the LSTM models): the common keys of
/// moe_options.cpp and the router's own keys (`gating` names it, or a map of routers by role). Unknown
/// keys are errors naming them; `hidden` defaults to default_hidden.
MoeOptions moe_options_from_yaml(const YAML::Node& node, int64_t dim, int64_t default_hidden);
/// The options at `role`: `router` replaced by role_routers[role] when the map has it.
MoeOptions at_role(const MoeOptions& opt, FfnRole role);
/// Checks the options (sizes, k ranges, divisibility, the router's own checks); errors name the option.
void validate(const MoeOptions& opt);
/// The keys of type moe and of every router, for --help.
std::string moe_keys_help();

/// The layer's weights as expressions (moe_layer declares them as parameters; tests pass leaves).
struct MoeWeights {
  Expr w_gate, w_noise;    // [d, n] ([d, groups] when hierarchical), f32 (f64 for f64 inputs)
  Expr w_gate2, w_noise2;  // hierarchical: [groups, d, experts per group]
  Expr thresholds;         // batchwise: [n]
  ExpertWeights experts;   // [n, d, hidden], ..., [n, hidden, d] in x's dtype ([experts_per_rank, ...]: this rank's)
  RouterWeights router;    // other routers' parameters and states by leaf ("gate.bias", ...; the fields above join it)
  ExpertWeights shared;    // shared experts: [shared, d, shared_hidden], ..., [shared, shared_hidden, d]
};

struct MoeOutput {
  Expr y;                           // [N, d]
  Expr importance, load;            // [n] (undefined where the router gives none / load outside training)
  Expr importance_loss, load_loss;  // [] CV^2 values, unweighted (training only)
  Expr z_loss;                      // [] the router z-loss, unweighted (training, z_loss > 0)
  std::vector<AuxTerm> losses;      // the router's own losses, weighted (training only)
  Expr router_loss;                 // [] their sum (training; undefined when none)
  Routing routing;                  // the (expert, token, gate) assignments, before any capacity
  int64_t capacity = 0;             // the token capacity applied per expert (0: none)
};

/// Whether `e` is a batchwise gate's thresholds T ("<site>.gate.thresholds"): trained by the threshold loss
/// alone, they take no part in the model's loss, so moe-train steps them outside the gradient norm that
/// it logs and clips (Optimizer::set_unclipped; docs/MODELS.md §3.10).
bool is_batchwise_threshold(const ParamEntry& e);

/// Whether the layer runs expert-parallel: experts_per_rank > 0 and `comm` has several ranks; then
/// experts_per_rank * ranks must equal experts.
bool expert_parallel(const MoeOptions& opt, dist::Communicator* comm);

/// The layer on explicit weights; `ctx` carries the mode, the noise streams, the rows' leading shape and
/// padding and the communicator.
MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const RouterContext& ctx);
/// The same for rows of no sequence ([N]); `noise` / `noise2` drive the primary / secondary gate noise
/// (fixed seeds make it deterministic); `training` selects the training mode and computes the losses.
MoeOutput moe_forward(const Expr& x, const MoeWeights& w, const MoeOptions& opt, const GateNoise& noise,
                      const GateNoise& noise2, bool training, dist::Communicator* comm = nullptr);

/// The MoE layer on token rows x [N, d] -> [N, d] (any compute dtype; gating runs in f32).
/// In training mode it adds the aux losses "<prefix>.importance" and "<prefix>.load", the router's own
/// ("<prefix>.batchwise_threshold", "<prefix>.balance", ...) and "<prefix>.z_loss" to the builder.
/// Inference graphs report the routing to the builder's gate recorder (layers/gate_recorder.h; family moe),
/// one row per token.
Expr moe_layer(const Builder& b, const Expr& x, const MoeOptions& opt);
/// The 1B-word LM block around it (§3.9): x + dropout(sigmoid(moe_layer(x)), p).
Expr moe_lm_block(const Builder& b, const Expr& x, const MoeOptions& opt, float dropout_p);
/// The Transformer FFN site: x [..., d] flattened to rows, moe_layer, reshaped back (recorded as [..., n]);
/// `padding` ([...], nonzero at real tokens) for routers that read it.
Expr moe_ffn(const Builder& b, const Expr& x, const MoeOptions& opt, const Tensor& padding = {});

}  // namespace moe
