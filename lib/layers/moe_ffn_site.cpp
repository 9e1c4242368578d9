// Feed-forward type moe (moe_ffn.h) as a site family: the options parsed once per model (hidden
// defaults to the model's FFN width). Covered by tests/layers/moe_ffn_test.cpp and
// tests/layers/sites_test.cpp.
#include "layers/moe_ffn.h"
#include "layers/sites.h"

namespace moe {

namespace {
class MoeFfnSite : public FfnSite {
 public:
  explicit MoeFfnSite(MoeOptions o) : o_(o) {}
  Expr build(const Builder& b, const Expr& x) const override { return moe_ffn(b, x, o_); }

 private:
  MoeOptions o_;
};
}  // namespace

FfnFamily moe_ffn_family() {
  return {"moe", [](const YAML::Node& options, const FfnShape& shape) -> std::unique_ptr<FfnSite> {
            return std::make_unique<MoeFfnSite>(moe_options_from_yaml(options, shape.dim, shape.hidden));
          }};
}

}  // namespace moe
