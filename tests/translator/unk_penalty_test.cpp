// The unknown-word penalty (translator/unk_penalty.h): beam search and sampling with unkpen p give what a scorer
// that subtracts p from <unk> itself gives, scores included; with inf no output holds <unk> where the plain
// search's do; a forced prefix keeps its <unk>; a penalty without the vocabulary's <unk> id, or with one outside
// the model's tokens, is an error. The request field and the flag are covered by tests/serving/request_test.cpp
// and tests/translator/decoding_options_test.cpp.
#include "translator/unk_penalty.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>

#include "mock_scorer.h"

using namespace moe;
using test::hashed;
using test::MockScorer;
using test::search_three;

namespace {
using Tokens = std::vector<int32_t>;
constexpr int64_t kVocab = 12;
constexpr int32_t kUnk = 1;

/// Log-probs that favour <unk> (so that plain search outputs it), less `penalty` on <unk> past `free_from` tokens.
MockScorer unk_scorer(double penalty, size_t free_from = 0) {
  return MockScorer(kVocab, [penalty, free_from](int64_t s, const Tokens& prefix) {
    std::vector<double> lp = hashed(s, prefix, kVocab);
    lp[kUnk] += 2.5;
    lp[3] -= 2.0;  // </s> late
    if (prefix.size() >= free_from) lp[kUnk] -= penalty;
    return lp;
  });
}

BeamOptions options(bool sampling, double unkpen) {
  BeamOptions o;
  o.beam = o.n_best = 3;
  o.max_len_b = 10;
  o.min_len = 4;
  o.sampling = sampling;
  o.unk_id = kUnk;
  o.unkpen = unkpen;
  return o;
}

bool holds_unk(const Hypothesis& h) { return std::count(h.tokens.begin(), h.tokens.end(), kUnk) > 0; }
}  // namespace

TEST_CASE("search with unkpen equals a scorer that penalises <unk> itself", "[translator][unkpen]") {
  for (bool sampling : {false, true})
    for (double p : {1.5, -0.5, std::numeric_limits<double>::infinity()}) {
      INFO((sampling ? "sampling" : "beam") << " unkpen " << p);
      const auto penalised = search_three(unk_scorer(0), options(sampling, p));
      const auto expected = search_three(unk_scorer(p), options(sampling, 0));
      REQUIRE(penalised.size() == expected.size());
      for (size_t s = 0; s < expected.size(); ++s) {
        REQUIRE(penalised[s].size() == expected[s].size());
        for (size_t h = 0; h < expected[s].size(); ++h) {
          CHECK(penalised[s][h].tokens == expected[s][h].tokens);
          CHECK(penalised[s][h].log_prob == Approx(expected[s][h].log_prob).epsilon(1e-6));
          CHECK(penalised[s][h].score == Approx(expected[s][h].score).epsilon(1e-6));
        }
      }
    }
}

TEST_CASE("unkpen inf never outputs <unk>", "[translator][unkpen]") {
  for (bool sampling : {false, true}) {
    INFO((sampling ? "sampling" : "beam"));
    const auto plain = search_three(unk_scorer(0), options(sampling, 0));
    const auto never = search_three(unk_scorer(0), options(sampling, std::numeric_limits<double>::infinity()));
    bool plain_has_unk = false;
    for (size_t s = 0; s < never.size(); ++s) {
      REQUIRE(!never[s].empty());
      for (const auto& h : never[s]) CHECK_FALSE(holds_unk(h));
      for (const auto& h : plain[s]) plain_has_unk = plain_has_unk || holds_unk(h);
    }
    CHECK(plain_has_unk);  // the test could fail
  }
}

TEST_CASE("a forced prefix keeps its <unk> under unkpen inf", "[translator][unkpen]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (bool sampling : {false, true}) {
    INFO((sampling ? "sampling" : "beam"));
    const TargetPrefixes prefixes = {{4, kUnk}, {kUnk}, {}};
    const auto out = search_three(unk_scorer(0), options(sampling, inf), prefixes);
    for (size_t s = 0; s < out.size(); ++s) {
      REQUIRE(!out[s].empty());
      for (const auto& h : out[s]) {
        const Tokens& p = prefixes[s];
        REQUIRE(h.tokens.size() >= p.size());
        CHECK(Tokens(h.tokens.begin(), h.tokens.begin() + static_cast<int64_t>(p.size())) == p);
        CHECK(std::count(h.tokens.begin() + static_cast<int64_t>(p.size()), h.tokens.end(), kUnk) == 0);
        CHECK(std::isfinite(h.log_prob));
      }
    }
  }
}

TEST_CASE("unkpen needs the vocabulary's <unk> inside the model's tokens", "[translator][unkpen]") {
  for (bool sampling : {false, true}) {
    INFO((sampling ? "sampling" : "beam"));
    BeamOptions o = options(sampling, 2.0);
    o.unk_id = -1;
    CHECK_THROWS_WITH(search_three(unk_scorer(0), o), Catch::Contains("<unk> id was not given"));
    o.unk_id = static_cast<int32_t>(kVocab);
    CHECK_THROWS_WITH(search_three(unk_scorer(0), o), Catch::Contains("outside the model's 12 output tokens"));
    o.unkpen = 0;  // no penalty: no id needed
    CHECK_NOTHROW(search_three(unk_scorer(0), o));
  }
}
