// The site registry (layers/sites.h): the built-in families by name, unknown types listing the known
// ones, options parsed and checked once when a site is made (unknown keys of every family, the dense
// FFN's own width), what MAE sites read per role and which of their roles see the future, the MoA
// cross-attention cache, pinning of stored options, and a new family plugged in by one registration.
#include "layers/sites.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "graph/graph.h"

using namespace moe;

namespace {
YAML::Node yaml(const std::string& text) { return YAML::Load(text); }

/// A family that scales its input: what a new attention variant adds besides its layer code.
class ScaledIdentity : public AttentionSite {
 public:
  ScaledIdentity(const AttentionShape& s, float k) : AttentionSite(s), k_(k) {}
  Expr build(const Builder&, const AttentionInput& in, SiteRole) const override { return in.x; }
  float k_;
};
}  // namespace

TEST_CASE("sites: the built-in families and their errors", "[layers][sites]") {
  const SiteRegistry& r = SiteRegistry::instance();
  CHECK(r.attention_types() == std::vector<std::string>{"mha", "mae", "moa"});
  CHECK(r.ffn_types() == std::vector<std::string>{"dense", "moe"});
  const AttentionShape a{16, 4};
  const FfnShape f{16, 32};
  CHECK(r.attention(YAML::Node(), a));               // no options: mha
  CHECK(r.attention(yaml("{type: moa, k: 2}"), a));  // parsed once, here
  CHECK_THROWS_WITH(r.attention(yaml("{type: sparse}"), a),
                    Catch::Contains("unknown attention type 'sparse'") && Catch::Contains("mha, mae, moa"));
  CHECK_THROWS_WITH(r.ffn(yaml("{type: conv}"), f), Catch::Contains("known: dense, moe"));
  CHECK_THROWS_WITH(r.attention(yaml("{type: mha, heads: 2}"), a),
                    Catch::Contains("unknown option 'model.attention.heads' for attention type mha"));
  CHECK_THROWS_WITH(r.attention(yaml("{type: moa, experts: 2, k: 4}"), a), Catch::Contains("k (4)"));
  CHECK_THROWS_WITH(r.ffn(yaml("{type: dense, hiden: 8}"), f), Catch::Contains("did you mean 'model.ffn.hidden'"));
  CHECK_THROWS_WITH(r.ffn(yaml("{type: moe, experts: 4, k: 9}"), f), Catch::Contains("k = 9"));
  CHECK(r.ffn(YAML::Node(), f, "moe"));  // the fallback family (LSTM LMs' MoE layers)
  // the dense FFN may run on the real rows only; routed experts (capacity, balancing over rows) may not
  CHECK(r.ffn(YAML::Node(), f)->position_wise());
  CHECK_FALSE(r.ffn(yaml("{type: moe, experts: 4, k: 2}"), f)->position_wise());
}

TEST_CASE("sites: the dense FFN takes its own width", "[layers][sites]") {
  ParameterStore store(Device::cpu(), 1);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  const Expr x = g.input(Tensor::zeros(Shape{2, 16}, DType::f32, Device::cpu()));
  SiteRegistry::instance()
      .ffn(yaml("{type: dense, hidden: 24, activation: gelu}"), FfnShape{16, 32})
      ->build(Builder(g, "ffn"), x);
  CHECK(store.entry(store.find("ffn.fc1.w")).shape == Shape({16, 24}));
}

TEST_CASE("sites: what MAE sites read, which roles see the future, pinned presets", "[layers][sites][mae]") {
  const SiteRegistry& r = SiteRegistry::instance();
  const AttentionShape a{16, 4};
  const auto leak_free = r.attention(yaml("{type: mae}"), a);
  CHECK(leak_free->inputs(SiteRole::encoder_self).query_padding);  // full_mean averages the real positions
  CHECK_FALSE(leak_free->inputs(SiteRole::decoder_self).query_padding);
  CHECK(leak_free->sees_future({SiteRole::decoder_self, SiteRole::decoder_cross}).empty());
  const auto paper = r.attention(yaml("{type: mae, gate_input: paper}"), a);
  CHECK(paper->sees_future({SiteRole::decoder_self, SiteRole::decoder_cross, SiteRole::lm_self}) ==
        std::vector<SiteRole>{SiteRole::decoder_self, SiteRole::decoder_cross});
  const auto source = r.attention(yaml("{type: mae, gate_input: {decoder_cross: source_mean}}"), a);
  CHECK(source->inputs(SiteRole::decoder_cross).source_mean);
  CHECK(r.attention(yaml("{type: moa}"), a)->sees_future({SiteRole::decoder_self}).empty());
  YAML::Node stored = yaml("{type: mae, gate_input: {decoder_self: full_mean}}");
  r.pin(stored);
  CHECK(stored["gate_input"]["decoder_cross"].as<std::string>() == "causal_prefix_mean");
  CHECK(stored["gate_norm"].as<std::string>() == "leak_free");
  YAML::Node moa = yaml("{type: moa}");
  r.pin(moa);  // families without a pin leave their options alone
  CHECK(moa.size() == 1);
}

TEST_CASE("sites: MoA fills a cross-attention cache with its one shared head", "[layers][sites][moa]") {
  ParameterStore store(Device::cpu(), 2);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  const Expr memory = g.input(Tensor::zeros(Shape{2, 5, 16}, DType::f32, Device::cpu()));
  KVCache moa, mha;
  SiteRegistry::instance()
      .attention(yaml("{type: moa, k: 2, experts: 4, head_dim: 8}"), {16, 4})
      ->fill_cross_cache(Builder(g, "x"), memory, Tensor(), moa);
  SiteRegistry::instance().attention(YAML::Node(), {16, 4})->fill_cross_cache(Builder(g, "y"), memory, Tensor(), mha);
  CHECK(moa.k.shape() == Shape({2, 5, 1, 8}));
  CHECK(mha.k.shape() == Shape({2, 5, 4, 4}));
}

TEST_CASE("sites: a new family plugs in by one registration", "[layers][sites]") {
  SiteRegistry r;  // a registry of its own: the process-wide one stays as it is
  register_builtin_sites(r);
  r.add(AttentionFamily{"identity", [](const YAML::Node& o, const AttentionShape& s) -> std::unique_ptr<AttentionSite> {
                          return std::make_unique<ScaledIdentity>(s, o["k"] ? o["k"].as<float>() : 1.f);
                        }});
  CHECK(r.attention_types().back() == "identity");
  const auto site = r.attention(yaml("{type: identity, k: 2}"), {16, 4});
  CHECK(dynamic_cast<const ScaledIdentity&>(*site).k_ == 2.f);
  CHECK_THROWS_WITH(r.add(AttentionFamily{"mae", {}}), Catch::Contains("registered twice"));
}
