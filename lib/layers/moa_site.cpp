// Attention type moa (moa.h) as a site family: options parsed once per model; decoding fills the
// cross-attention cache with MoA's one shared key/value head; it describes its routed heads (RoutedSite). Covered by
// tests/layers/moa_test.cpp and tests/layers/sites_test.cpp.
#include "layers/moa.h"
#include "layers/sites.h"

namespace moe {

namespace {
class MoaSite : public AttentionSite {
 public:
  MoaSite(const AttentionShape& shape, MoaOptions o) : AttentionSite(shape), o_(o) {}
  Expr build(const Builder& b, const AttentionInput& in, SiteRole) const override {
    return moa_attention_layer(b, in, shape_.dim, o_);
  }
  void fill_cross_cache(const Builder& b, const Expr& memory, const Tensor&, KVCache& cache) const override {
    moa_fill_cross_cache(b, memory, shape_.dim, o_, cache);
  }
  /// The routed heads: E experts of which each query uses k; their q and o projections are per expert.
  std::optional<RoutedSite> routed(SiteRole) const override {
    RoutedSite s;
    s.router = "moa";
    s.experts = o_.experts;
    s.active = o_.k;
    s.expert_params = {"q.w", "o.w"};
    return s;
  }

 private:
  MoaOptions o_;
};
}  // namespace

AttentionFamily moa_family() {
  return {"moa", [](const YAML::Node& options, const AttentionShape& shape) -> std::unique_ptr<AttentionSite> {
            return std::make_unique<MoaSite>(shape, MoaOptions::from_yaml(options, shape.heads));
          },
          /*pin=*/nullptr};
}

}  // namespace moe
