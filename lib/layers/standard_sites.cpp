// The standard families: attention type mha (multi-head attention, attention_layer.h) and feed-forward
// type dense (the position-wise FFN, basic.h). mha takes no options besides its type; dense may set its
// own hidden width and activation.
// Covered by tests/layers/sites_test.cpp and tests/layers/transformer_test.cpp.
#include "config/keys.h"
#include "layers/sites.h"

namespace moe {

namespace {
struct NoOptions {};

void check_no_options(const YAML::Node& options, const std::string& section, const char* what) {
  NoOptions none;
  config::Keys<NoOptions>(what).accept("type", "the family").read(options, none, section);
}

/// Feed-forward type dense: hidden and activation default to the model's (model.ffn_dim, model.activation).
const config::Keys<FfnShape>& dense_keys() {
  static const config::Keys<FfnShape> keys =
      config::Keys<FfnShape>("ffn type dense")
          .accept("type", "dense")
          .add("hidden", &FfnShape::hidden, "inner width (default: the model's)", config::at_least<int64_t>(1))
          .add("activation", &FfnShape::activation, "activation");
  return keys;
}

class MhaSite : public AttentionSite {
 public:
  using AttentionSite::AttentionSite;
  Expr build(const Builder& b, const AttentionInput& in, SiteRole) const override {
    return multi_head_attention(b, in, shape_.dim, shape_.heads);
  }
};

class DenseFfnSite : public FfnSite {
 public:
  explicit DenseFfnSite(const FfnShape& s) : s_(s) {}
  Expr build(const Builder& b, const Expr& x, const FfnInput&) const override {
    return feed_forward(b, x, s_.dim, s_.hidden, s_.activation, s_.activation_dropout);
  }
  bool position_wise() const override { return true; }

 private:
  FfnShape s_;
};
}  // namespace

AttentionFamily mha_family() {
  return {"mha", [](const YAML::Node& options, const AttentionShape& shape) -> std::unique_ptr<AttentionSite> {
            check_no_options(options, "model.attention", "attention type mha");
            return std::make_unique<MhaSite>(shape);
          },
          /*pin=*/nullptr};
}

FfnFamily dense_ffn_family() {
  return {"dense",
          [](const YAML::Node& options, const FfnShape& shape) -> std::unique_ptr<FfnSite> {
            FfnShape s = shape;
            dense_keys().read(options, s, "model.ffn");
            return std::make_unique<DenseFfnSite>(s);
          },
          /*help=*/nullptr};
}

}  // namespace moe
