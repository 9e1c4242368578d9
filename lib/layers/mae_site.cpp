// Attention type mae (mae.h) as a site family: the options parsed once per model, the gate input each
// role reads (full_mean averages the real queries, so it needs their padding; source_mean the encoder
// output mean), the roles whose teacher-forced gates see later target positions, and the pinning of
// the gate presets into stored architectures. Covered by tests/layers/mae_test.cpp,
// tests/layers/mae_causality_test.cpp and tests/layers/sites_test.cpp.
#include "layers/mae.h"

namespace moe {

namespace {
class MaeSite : public AttentionSite {
 public:
  MaeSite(const AttentionShape& shape, MaeOptions o) : AttentionSite(shape), o_(std::move(o)) {}
  Expr build(const Builder& b, const AttentionInput& in, SiteRole role) const override {
    return mae_attention_layer(b, in, shape_.dim, o_, role);
  }
  SiteInputs inputs(SiteRole role) const override {
    const GateInput policy = o_.policy(role);
    return {.query_padding = policy == GateInput::full_mean, .source_mean = policy == GateInput::source_mean};
  }
  std::vector<SiteRole> sees_future(const std::vector<SiteRole>& roles) const override {
    std::vector<SiteRole> out;
    for (SiteRole r : roles)
      if (o_.gate == MaeGate::learned && o_.policy(r) == GateInput::full_mean) out.push_back(r);
    return out;
  }

 private:
  MaeOptions o_;
};
}  // namespace

AttentionFamily mae_family() {
  return {"mae",
          [](const YAML::Node& options, const AttentionShape& shape) -> std::unique_ptr<AttentionSite> {
            return std::make_unique<MaeSite>(shape, MaeOptions::from_yaml(options, shape.heads));
          },
          [](YAML::Node& options) { MaeOptions::pin_gate_input(options); }};
}

}  // namespace moe
