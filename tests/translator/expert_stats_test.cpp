// The statistics of moe-score experts (lib/translator/expert_stats.h) against hand-computed values:
// entropy, argmax, shares, CV and max/mean, PMI on a tiny table (min count, top, ties), a site's
// accumulated summary (importance and routed shares, empty slots) and site names -> layer and kind.
#include "translator/expert_stats.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace moe;

namespace {
std::vector<float> fv(std::initializer_list<float> v) { return v; }
}  // namespace

TEST_CASE("experts: entropy, argmax, shares and load balance", "[translator][experts]") {
  CHECK(gate_entropy(fv({0.25f, 0.25f, 0.25f, 0.25f})) == Approx(std::log(4.0)).margin(1e-12));
  CHECK(gate_entropy(fv({1.f, 0.f, 0.f})) == 0.0);
  CHECK(gate_entropy(fv({0.5f, 0.25f, 0.25f})) == Approx(1.5 * std::log(2.0)).margin(1e-12));
  CHECK(argmax_expert(fv({0.2f, 0.4f, 0.4f})) == 1);  // ties: the lowest index
  CHECK(argmax_expert(fv({0.9f, 0.1f})) == 0);
  const auto s = shares_of({3, 1, 0, 0});
  CHECK(s == std::vector<double>{0.75, 0.25, 0, 0});
  CHECK(shares_of({0, 0}) == std::vector<double>{0, 0});
  // mean 1/4; deviations 1/2, 0, -1/4, -1/4: variance 3/32, CV = sqrt(3/32) * 4 = sqrt(3/2); max/mean 3.
  const Balance b = load_balance(s);
  CHECK(b.cv == Approx(std::sqrt(1.5)).epsilon(1e-12));
  CHECK(b.max_over_mean == Approx(3.0).epsilon(1e-12));
  const Balance even = load_balance({0.5, 0.5});
  CHECK(even.cv == 0.0);
  CHECK(even.max_over_mean == 1.0);
  // One expert takes everything of E: CV = sqrt(E - 1), max/mean = E.
  const Balance one = load_balance({0, 1, 0, 0, 0, 0, 0, 0});
  CHECK(one.cv == Approx(std::sqrt(7.0)).epsilon(1e-12));
  CHECK(one.max_over_mean == Approx(8.0).epsilon(1e-12));
  CHECK(load_balance({0, 0}).cv == 0.0);
}

TEST_CASE("experts: PMI on a tiny table", "[translator][experts]") {
  // n(t, e): a [2, 0], b [1, 1], c [0, 3]; N = 7, n(e0) = 3, n(e1) = 4.
  const PmiTable table = {{"a", {2, 0}}, {"b", {1, 1}}, {"c", {0, 3}}};
  const auto all = top_pmi(table, 2, 1, 10);
  REQUIRE(all.size() == 2);
  REQUIRE(all[0].size() == 2);
  CHECK(all[0][0].token == "a");
  CHECK(all[0][0].pmi == Approx(std::log(2.0 * 7 / (2 * 3))).epsilon(1e-12));
  CHECK(all[0][0].joint == 2);
  CHECK(all[0][0].count == 2);
  CHECK(all[0][1].token == "b");
  CHECK(all[0][1].pmi == Approx(std::log(7.0 / 6)).epsilon(1e-12));
  REQUIRE(all[1].size() == 2);
  CHECK(all[1][0].token == "c");
  CHECK(all[1][0].pmi == Approx(std::log(3.0 * 7 / (3 * 4))).epsilon(1e-12));
  CHECK(all[1][1].token == "b");
  CHECK(all[1][1].pmi == Approx(std::log(7.0 / 8)).epsilon(1e-12));
  // min count 3 keeps only c (a and b occur twice); top 1 keeps the best.
  const auto frequent = top_pmi(table, 2, 3, 10);
  CHECK(frequent[0].empty());
  REQUIRE(frequent[1].size() == 1);
  CHECK(frequent[1][0].token == "c");
  CHECK(top_pmi(table, 2, 1, 1)[0].size() == 1);
  // Equal PMI: the larger joint count first, then the text.
  const auto ties = top_pmi({{"x", {1, 0}}, {"y", {2, 0}}, {"z", {1, 0}}, {"w", {0, 4}}}, 2, 1, 10);
  REQUIRE(ties[0].size() == 3);
  CHECK(ties[0][0].token == "y");
  CHECK(ties[0][1].token == "x");
  CHECK(ties[0][2].token == "z");
  CHECK_THROWS_WITH(top_pmi({{"a", {1}}}, 2, 1, 1), Catch::Contains("token 'a' has 1 expert counts"));
}

TEST_CASE("experts: a site's summary", "[translator][experts]") {
  SiteStats st("decoder.l2.ffn", "moe", "noisy_topk", "decoder", 3, false);
  CHECK(st.add_gate(fv({0.5f, 0.5f, 0.f})) == 0);
  CHECK(st.add_gate(fv({0.f, 0.25f, 0.75f})) == 2);
  st.add_routed(std::vector<int32_t>{0, 1}, fv({0.5f, 0.5f}));
  st.add_routed(std::vector<int32_t>{2, 1}, fv({0.75f, 0.25f}));
  st.add_routed(std::vector<int32_t>{1, -1}, fv({1.f, 0.f}));  // an empty slot is not routed
  st.add_routed(std::vector<int32_t>{0, 2}, fv({1.f, 0.f}));   // nor is a zero gate (expert 2 here)
  st.add_event("x", 0);
  st.add_event("y", 2, 3);
  CHECK_THROWS_WITH(st.add_gate(fv({1.f})), Catch::Contains("a gate over 1 experts, not 3"));
  const SiteSummary s = st.summary(1, 5);
  CHECK(s.layer == 2);
  CHECK(s.kind == "ffn");
  CHECK(s.instances == 2);
  CHECK(s.entropy == Approx((std::log(2.0) + (0.25 * std::log(4.0) + 0.75 * std::log(4.0 / 3))) / 2).epsilon(1e-7));
  CHECK(s.max_entropy == Approx(std::log(3.0)));
  CHECK(s.argmax_share == std::vector<double>{0.5, 0, 0.5});
  CHECK(s.importance_share[0] == Approx(0.25));
  CHECK(s.importance_share[1] == Approx(0.375));
  CHECK(s.importance_share[2] == Approx(0.375));
  CHECK(s.k == 2);
  CHECK(s.routed_pairs == 6);
  CHECK(s.routed_share[0] == Approx(2.0 / 6));
  CHECK(s.routed_share[1] == Approx(3.0 / 6));
  CHECK(s.routed_share[2] == Approx(1.0 / 6));
  CHECK(s.pmi_events == 4);
  REQUIRE(s.top_tokens[0].size() == 1);
  CHECK(s.top_tokens[0][0].pmi == Approx(std::log(4.0)));  // 1 * 4 / (1 * 1)
  CHECK(s.top_tokens[1].empty());
  // Without routed slots a site has no routed shares.
  SiteStats mae("encoder.l0.self_attn", "mae", "full_mean", "encoder", 2, true);
  mae.add_gate(fv({0.5f, 0.5f}));
  CHECK(mae.summary(5, 10).routed_share.empty());
  CHECK(mae.summary(5, 10).entropy == Approx(std::log(2.0)));
}

TEST_CASE("experts: layer and kind from site names", "[translator][experts]") {
  CHECK(site_layer_kind("encoder.l3.self_attn") == std::pair<int, std::string>{3, "self_attn"});
  CHECK(site_layer_kind("decoder.l12.cross_attn") == std::pair<int, std::string>{12, "cross_attn"});
  CHECK(site_layer_kind("moe1") == std::pair<int, std::string>{1, "moe"});
  CHECK(site_layer_kind("site") == std::pair<int, std::string>{-1, "site"});
}
