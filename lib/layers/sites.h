// The attention and feed-forward "sites" of a model's layers and the registry of their families.
// A family (mha, mae, moa; dense, moe) registers a builder by its name, the `type` of model.attention /
// model.ffn; a model asks the registry once, when it is built, for a site made from the options node
// (parsed and checked there, never again per forward pass) and its shape, then calls the site per layer
// and per pass. A new family adds its own files and one line in layers/builtin_sites.cpp
// (docs/CONTRIBUTING.md walks through it). Covered by tests/layers/sites_test.cpp, the families' tests and
// tests/layers/transformer_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layers/attention_layer.h"
#include "layers/basic.h"

namespace moe {

/// Where an attention site sits in a model; some families read it (MAE picks its gate input per role).
MOE_NAMED_ENUM(SiteRole, encoder_self, decoder_self, decoder_cross, lm_self)

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

 protected:
  AttentionShape shape_;
};

class FfnSite {
 public:
  virtual ~FfnSite() = default;
  /// The site's output for rows x [..., d].
  virtual Expr build(const Builder& b, const Expr& x) const = 0;
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

 private:
  std::vector<AttentionFamily> attention_;
  std::vector<FfnFamily> ffn_;
};

/// options["type"], or `fallback` when the node or the key is absent.
std::string site_type(const YAML::Node& options, const char* fallback);

/// The built-in families, one registration line each (builtin_sites.cpp).
void register_builtin_sites(SiteRegistry& registry);
AttentionFamily mha_family();
AttentionFamily mae_family();
AttentionFamily moa_family();
FfnFamily dense_ffn_family();
FfnFamily moe_ffn_family();

}  // namespace moe
