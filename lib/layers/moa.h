// MoA: mixture of attention heads (Zhang et al. 2022; docs/MODELS.md §2). A router picks, per query token,
// k of E experts; expert e has its own query map A_e [d, D] and output map B_e [D, d], while ONE
// shared key map W_K and ONE shared value map W_V of width D serve every expert (the k selected
// queries attend as k heads over a single k/v head, Hk = 1, so a decoder cache holds one head):
//   z_t = sum_j w_tj * attend(x_t A_e(t,j) / sqrt(D), Y W_K, Y W_V) B_e(t,j)
// The expert maps run through the grouped GEMM (sort_by_key, index_select, grouped_matmul, gated
// index_add back), or as two dense GEMMs when k = E. Covered by tests/layers/moa_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "layers/attention_layer.h"

namespace moe {

MOE_NAMED_ENUM(MoaRenormalize, none, detached)  // detached: w / stopgrad(sum w + 1e-6)
/// auto: dense when k == E; enum_names by hand since `auto` is a keyword.
enum class MoaDispatch { automatic, sparse, dense };
inline const std::vector<std::string>& enum_names(MoaDispatch) {
  static const std::vector<std::string> names{"auto", "sparse", "dense"};
  return names;
}
/// sum: the aux terms land on the token-summed loss (released code); mean: on the per-token mean loss.
MOE_NAMED_ENUM(MoaAuxNormalization, sum, mean)

struct MoaOptions {
  int k = 8;                                          // experts (heads) per token; defaults to model.heads
  int experts = 8;                                    // E
  int64_t head_dim = 128;                             // D
  MoaRenormalize renormalize = MoaRenormalize::none;  // none: the released code
  MoaDispatch dispatch = MoaDispatch::automatic;
  float switch_loss = 0.01f, z_loss = 0.001f, cv_loss = 0.f;  // aux coefficients (§2.5)
  MoaAuxNormalization aux_normalization = MoaAuxNormalization::sum;

  /// Reads model.attention (type moa): k, experts, head_dim, or name: "8K8E128D" (KkEeDd), and the
  /// options above. Unknown keys and inconsistent values are errors naming them.
  static MoaOptions from_yaml(const YAML::Node& node, int default_k);
  /// "8K8E128D".
  std::string name() const;
  bool dense() const { return dispatch == MoaDispatch::dense || (dispatch == MoaDispatch::automatic && k == experts); }
};

/// The weights of one MoA sublayer: router [d, E] (router dtype: f64 in f64 graphs, else f32),
/// q [E, d, D], o [E, D, d], k and v [d, D] (compute dtype).
struct MoaWeights {
  Expr router, q, o, k, v;
};

/// Router output for N flattened tokens.
struct MoaRouting {
  Expr logits;                             // [N, E] router dtype
  Expr probs;                              // [N, E] softmax, 0 for padded tokens
  Expr gates;                              // [N, k] the k largest probabilities (renormalised if asked), descending
  Expr experts;                            // i32 [N, k] their expert ids
  Expr dense_gates;                        // [N, E] gates in expert order (set when k == E)
  Expr switch_loss, z_loss, cv_loss, aux;  // aux = coefficient-weighted sum; only when asked for
};

/// Routes x2 [N, d] (router dtype); keep [N] 1 = real token (undefined: all real).
MoaRouting moa_route(const Expr& x2, const Expr& router, const Expr& keep, const MoaOptions& o, bool with_aux);

struct MoaResult {
  Expr out;  // [B, Tq, d] in x's dtype
  MoaRouting routing;
  Expr keep;  // [B*Tq] 1 = real query, in the router dtype; undefined without query padding
};

/// The MoA sublayer on explicit weights. query_padding: optional u8 [B, Tq] (1 = real token); padded
/// queries get gates 0, output 0 and count in no expert load. The cache follows AttentionInput:
/// self-attention appends the shared k/v [B, t, 1, D]; cross-attention fills it once, then reuses it.
/// with_aux: compute the routing losses (default: in training graphs only).
MoaResult moa_attention(const AttentionInput& in, const MoaWeights& w, const MoaOptions& o,
                        const Tensor& query_padding = {}, int with_aux = -1);

/// The weights of the sublayer under builder `b` (router.w, q.w, o.w, k.w, v.w; §2.1 initialisers).
MoaWeights moa_weights(const Builder& b, int64_t dim, const MoaOptions& o);

/// The layer: declares the weights, runs moa_attention and, in training graphs, adds the aux loss
/// (f32 scalar) through Builder::add_aux_loss("moa.aux"). The trainer multiplies aux terms by the
/// batch's target tokens before dividing the summed loss by the update's tokens, so "mean" adds aux
/// as is, and "sum" divides it by the batch's target tokens (BuildContext::target_tokens; when
/// unknown, the call's real query tokens). The query padding is in.key_padding for self-attention
/// without a cache (encoder), none otherwise. Inference graphs report the router probabilities and the
/// top-k experts and gates per token to the builder's gate recorder (layers/gate_recorder.h; family moa).
Expr moa_attention_layer(const Builder& b, const AttentionInput& in, int64_t dim, const MoaOptions& o);

/// Decoding: fills a cross-attention cache with the shared k/v of `memory` ([B, S, 1, D] each).
void moa_fill_cross_cache(const Builder& b, const Expr& memory, int64_t dim, const MoaOptions& o, KVCache& cache);

}  // namespace moe
