// The attention and feed-forward "sites" of a model's layers and the registry of their families.
// A family (mha, mae, moa; dense, moe) registers a builder by its name, the `type` of model.attention /
// model.ffn; a model asks the registry once, when it is built, for a site made from the options node
// (parsed and checked there, never again per forward pass) and its shape, then calls the site per layer
// and per pass. A new family adds its own files and one line in layers/builtin_sites.cpp
// (docs/CONTRIBUTING.md walks through it).
// A site with routed experts (MoA, MoE) describes itself (RoutedSite: experts, experts active per token,
// which parameters hold experts, how a token's routing depends on the other tokens of its batch); the
// dry run, the expert report and the causality checks read that description, and the models refuse a
// routing that would let a causal position see later ones (check_routing). Covered by
// tests/layers/sites_test.cpp, the families' tests and tests/layers/transformer_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layers/attention_layer.h"
#include "layers/basic.h"

namespace moe {

/// Where an attention site sits in a model; some families read it (MAE picks its gate input per role).
MOE_NAMED_ENUM(SiteRole, encoder_self, decoder_self, decoder_cross, lm_self)
/// Where a feed-forward site sits: an encoder (every position sees the whole sequence: translation
/// encoders, masked LMs), a translation decoder, or a decoder-only language model.
MOE_NAMED_ENUM(FfnRole, encoder, decoder, lm)

/// How the routing of one token depends on the other tokens of the rows a routed layer sees:
///   token     on the token alone;
///   earlier   on the tokens before it, the rows flattened in order (a token capacity that earlier tokens
///             fill first): its own row's earlier positions and every earlier row, never a later
///             position of its own row;
///   sequence  on every token of its own row (expert choice within a sentence): later positions too,
///             never another row;
///   batch     on every token of the batch (batchwise gating in training).
MOE_NAMED_ENUM(RoutingScope, token, earlier, sequence, batch)
/// Whether a token's routing may depend on later positions of its own sequence.
inline bool sees_later(RoutingScope s) { return s == RoutingScope::sequence || s == RoutingScope::batch; }
/// Whether one row's tokens may move another row's routing.
inline bool couples_rows(RoutingScope s) { return s == RoutingScope::earlier || s == RoutingScope::batch; }

/// What a site with routed experts is (the family fills it in from its parsed options).
struct RoutedSite {
  std::string router;                      // the routing rule (moe: model.ffn.gating; moa: "moa")
  std::string router_key;                  // the option naming it, under the site's key ("gating")
  int experts = 0;                         // routed experts E
  double active = 0;                       // routed experts per token (an average for expert choice)
  int shared = 0;                          // experts every token uses besides them (DeepSeekMoE)
  std::vector<std::string> expert_params;  // parameter leaves under the site whose first axis is E
  int experts_per_rank = 0;                // expert parallelism (0: none)
  RoutingScope training = RoutingScope::token, inference = RoutingScope::token;
};

/// A routed site of a model: its parameter prefix (e.g. "decoder.l1.ffn"), the recipe key of its
/// options (e.g. "model.ffn"), where it sits and its description.
struct ModelRoutedSite {
  std::string prefix, key;
  FfnRole role = FfnRole::encoder;
  RoutedSite site;
};

/// Refuses a routed site whose routing lets a position see later ones where `role` cannot have it: a
/// decoder-only LM (FfnRole::lm) in training or inference, a translation decoder at inference (its
/// incremental decoding never has them). The error names `key` (e.g. "model.ffn.gating") and `model`.
void check_routing(const RoutedSite& site, FfnRole role, const std::string& key, const std::string& model);

struct AttentionShape {
  int64_t dim = 0;  // model width d
  int heads = 0;    // model.heads
};

struct FfnShape {
  int64_t dim = 0, hidden = 0;  // model width d and model.ffn_dim
  Activation activation = Activation::relu;
  float activation_dropout = 0;
};

/// What an attention site reads besides its queries and memory (AttentionInput::query_padding,
/// AttentionInput::source_mean), so the model computes them only for sites that use them.
struct SiteInputs {
  bool query_padding = false;
  bool source_mean = false;
};

class AttentionSite {
 public:
  explicit AttentionSite(AttentionShape shape) : shape_(shape) {}
  virtual ~AttentionSite() = default;
  const AttentionShape& shape() const { return shape_; }
  /// The site's output [B, Tq, d] for `in`; its parameters live under b's prefix.
  virtual Expr build(const Builder& b, const AttentionInput& in, SiteRole role) const = 0;
  /// Decoding: fills a cross-attention cache once from the encoder output `memory` (default: the
  /// per-head key and value projections of multi-head attention).
  virtual void fill_cross_cache(const Builder& b, const Expr& memory, const Tensor& memory_padding,
                                KVCache& cache) const;
  /// What the site at `role` reads besides its input (default: nothing).
  virtual SiteInputs inputs(SiteRole) const { return {}; }
  /// Roles whose teacher-forced graphs let a position's output depend on later target positions
  /// (causal models must warn about it; default: none).
  virtual std::vector<SiteRole> sees_future(const std::vector<SiteRole>&) const { return {}; }
  /// The routed experts at `role` (none by default).
  virtual std::optional<RoutedSite> routed(SiteRole) const { return std::nullopt; }

 protected:
  AttentionShape shape_;
};

/// What a feed-forward site reads besides its rows.
struct FfnInput {
  FfnRole role = FfnRole::encoder;
  int layer = -1;  // the layer of a layer stack (Transformers), -1 for a layer the model places itself (LSTMs)
  Tensor padding;  // x [B, T, d]: [B, T], nonzero at real tokens, when reads_padding(role); else undefined
};

class FfnSite {
 public:
  virtual ~FfnSite() = default;
  /// The site's output for rows x [..., d].
  virtual Expr build(const Builder& b, const Expr& x, const FfnInput& in) const = 0;
  /// The same at an encoder layer the model places itself, every row a real token.
  Expr build(const Builder& b, const Expr& x) const { return build(b, x, FfnInput{}); }
  /// The routed experts at `role` and `layer` (FfnInput::layer), none where the layer is dense.
  virtual std::optional<RoutedSite> routed(FfnRole, int) const { return std::nullopt; }
  /// Whether build() reads FfnInput::padding at `role` (the models compute it only then).
  virtual bool reads_padding(FfnRole) const { return false; }
  /// Whether each output row depends on its own input row only (no routing, capacity or statistics over rows),
  /// so that a model may run the site on the real positions of a batch only (models/transformer.h).
  virtual bool position_wise() const { return false; }
};

struct AttentionFamily {
  std::string name;  // model.attention.type
  std::function<std::unique_ptr<AttentionSite>(const YAML::Node& options, const AttentionShape& shape)> make;
  /// Optional: completes the options node before a checkpoint stores it (defaults that must not move
  /// when later versions change them).
  std::function<void(YAML::Node& options)> pin;
};

struct FfnFamily {
  std::string name;  // model.ffn.type
  std::function<std::unique_ptr<FfnSite>(const YAML::Node& options, const FfnShape& shape)> make;
  /// Optional: the family's keys for --help (moe-train appends them to its key list).
  std::function<std::string()> help;
};

class SiteRegistry {
 public:
  /// The registry with the built-in families (layers/builtin_sites.cpp).
  static SiteRegistry& instance();
  void add(AttentionFamily family);
  void add(FfnFamily family);
  /// The site of options["type"] (default mha) made from `options`; an unknown type is an error listing the known ones.
  std::shared_ptr<const AttentionSite> attention(const YAML::Node& options, const AttentionShape& shape) const;
  /// The site of options["type"] (default `fallback`).
  std::shared_ptr<const FfnSite> ffn(const YAML::Node& options, const FfnShape& shape,
                                     const std::string& fallback = "dense") const;
  /// Runs the attention family's pin on `options` (nothing for families without one).
  void pin(YAML::Node& options) const;
  std::vector<std::string> attention_types() const;
  std::vector<std::string> ffn_types() const;
  /// The feed-forward families' keys (FfnFamily::help), for --help.
  std::string help_text() const;

 private:
  std::vector<AttentionFamily> attention_;
  std::vector<FfnFamily> ffn_;
};

/// options["type"], or `fallback` when the node or the key is absent.
std::string site_type(const YAML::Node& options, const char* fallback);

/// Appends the routed experts of `ffn` at `role` and `layer` (its parameters under `prefix`, its options
/// under `key`) to `out`, after check_routing; a dense layer appends nothing. Models call it once per
/// feed-forward layer when they are built.
void add_routed_ffn(std::vector<ModelRoutedSite>& out, const FfnSite& ffn, FfnRole role, int layer,
                    const std::string& prefix, const std::string& key, const std::string& model);

/// The built-in families, one registration line each (builtin_sites.cpp).
void register_builtin_sites(SiteRegistry& registry);
AttentionFamily mha_family();
AttentionFamily mae_family();
AttentionFamily moa_family();
FfnFamily dense_ffn_family();
FfnFamily moe_ffn_family();

}  // namespace moe
