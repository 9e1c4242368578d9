// No repeated n-grams (translator/repeated_ngrams.h): the banned tokens of hand-made token lists; -inf written
// into exactly the banned places of f32 and f64 log-probabilities; beam search and sampling with
// no_repeat_ngram_size n give what they give, scores included, on a scorer that blocks the n-grams itself
// (a brute-force check written here), and their outputs hold no n-gram twice where the plain search's do;
// a forced prefix is kept even when it repeats one.
#include "translator/repeated_ngrams.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "mock_scorer.h"

using namespace moe;
using test::hashed;
using test::MockScorer;
using test::search_three;

namespace {
using Tokens = std::vector<int32_t>;
constexpr int64_t kVocab = 12;

/// Whether `tokens` + {t} ends with an n-gram that occurs earlier in it: the check by brute force.
bool repeats(const Tokens& tokens, int32_t t, int64_t n) {
  Tokens y = tokens;
  y.push_back(t);
  const int64_t len = static_cast<int64_t>(y.size());
  if (n <= 0 || len < n) return false;
  for (int64_t i = 0; i + n < len; ++i) {
    bool same = true;
    for (int64_t j = 0; j < n; ++j) same = same && y[i + j] == y[len - n + j];
    if (same) return true;
  }
  return false;
}

/// Whether some n-gram occurs twice in `tokens`.
bool has_repeat(const Tokens& tokens, int64_t n) {
  for (size_t l = 1; l < tokens.size(); ++l)
    if (repeats(Tokens(tokens.begin(), tokens.begin() + static_cast<int64_t>(l)), tokens[l], n)) return true;
  return false;
}

/// Log-probs that favour the cycle 4, 5, 6, 4, 5, 6, ... (so that plain search repeats n-grams); with
/// `blocked_n` > 0 the scorer itself gives -inf to the tokens that would repeat an n-gram.
MockScorer cycling_scorer(int64_t blocked_n) {
  return MockScorer(kVocab, [blocked_n](int64_t s, const Tokens& prefix) {
    std::vector<double> lp = hashed(s, prefix, kVocab);
    lp[4 + prefix.size() % 3] += 3.0;
    lp[3] -= 2.0;  // </s> late
    for (int32_t t = 0; t < kVocab; ++t)
      if (repeats(prefix, t, blocked_n)) lp[t] = -std::numeric_limits<double>::infinity();
    return lp;
  });
}

BeamOptions options(bool sampling) {
  BeamOptions o;
  o.beam = o.n_best = 3;
  o.max_len_b = 14;
  o.min_len = 6;  // n = 1 leaves 9 tokens: </s> must be allowed before they run out
  o.sampling = sampling;
  return o;
}

void check_same(const std::vector<std::vector<Hypothesis>>& x, const std::vector<std::vector<Hypothesis>>& y) {
  REQUIRE(x.size() == y.size());
  for (size_t s = 0; s < x.size(); ++s) {
    REQUIRE(x[s].size() == y[s].size());
    for (size_t h = 0; h < x[s].size(); ++h) {
      CHECK(x[s][h].tokens == y[s][h].tokens);
      CHECK(x[s][h].log_prob == y[s][h].log_prob);
      CHECK(x[s][h].score == y[s][h].score);
    }
  }
}
}  // namespace

TEST_CASE("repeated_ngram_tokens", "[translator][no_repeat]") {
  CHECK(repeated_ngram_tokens({}, 2).empty());
  CHECK(repeated_ngram_tokens({5}, 2).empty());
  CHECK(repeated_ngram_tokens({5, 6, 5}, 2) == Tokens{6});
  CHECK(repeated_ngram_tokens({5, 6, 5, 7, 5}, 2) == Tokens{6, 7});
  CHECK(repeated_ngram_tokens({7, 7, 7}, 2) == Tokens{7});
  CHECK(repeated_ngram_tokens({4, 7, 4}, 1) == Tokens{4, 7});
  CHECK(repeated_ngram_tokens({1, 2, 3, 1, 2}, 3) == Tokens{3});
  CHECK(repeated_ngram_tokens({1, 2, 3, 1, 2}, 4).empty());
  CHECK(repeated_ngram_tokens({1}, 3).empty());
  CHECK(repeated_ngram_tokens({1, 2, 1}, 0).empty());
  // Against the brute force on every list of 6 tokens over {0, 1, 2} and n 1..4.
  for (int code = 0; code < 729; ++code) {
    Tokens y;
    for (int c = code, i = 0; i < 6; ++i, c /= 3) y.push_back(c % 3);
    for (int64_t n = 1; n <= 4; ++n) {
      Tokens expected;
      for (int32_t t = 0; t < 3; ++t)
        if (repeats(y, t, n)) expected.push_back(t);
      INFO("code " << code << " n " << n);
      CHECK(repeated_ngram_tokens(y, n) == expected);
    }
  }
}

TEST_CASE("block_repeated_ngrams writes -inf where banned", "[translator][no_repeat]") {
  const Tokens a = {1, 2, 1}, b = {3, 3};
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    std::vector<float> values(18);
    for (size_t i = 0; i < values.size(); ++i) values[i] = -0.5f * static_cast<float>(i);
    Tensor logp = Tensor::from_vector(values, Shape{3, 6}, Device::cpu(), dt);
    block_repeated_ngrams(logp, {&a, &b, nullptr}, 2);
    const auto out = logp.to_vector<float>();
    for (size_t i = 0; i < values.size(); ++i) {
      const bool banned = i == 2 || i == 6 + 3;  // row 0 token 2, row 1 token 3; row 2 not blocked
      INFO(i);
      CHECK(out[i] == (banned ? -std::numeric_limits<float>::infinity() : values[i]));
    }
  }
  Tensor logp = Tensor::zeros(Shape{2, 6}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(block_repeated_ngrams(logp, {&a}, 2), Catch::Contains("[2,6] for 1 rows"));
}

TEST_CASE("search without repeated n-grams equals a scorer that blocks them", "[translator][no_repeat]") {
  for (bool sampling : {false, true})
    for (int64_t n : {1, 2, 3}) {
      INFO((sampling ? "sampling" : "beam") << " n " << n);
      BeamOptions o = options(sampling);
      const auto plain = search_three(cycling_scorer(0), o);
      o.no_repeat_ngram_size = n;
      const auto blocked = search_three(cycling_scorer(0), o);
      check_same(blocked, search_three(cycling_scorer(n), options(sampling)));
      bool plain_repeats = false;
      for (size_t s = 0; s < blocked.size(); ++s) {
        REQUIRE(!blocked[s].empty());
        for (const auto& h : blocked[s]) CHECK_FALSE(has_repeat(h.tokens, n));
        for (const auto& h : plain[s]) plain_repeats = plain_repeats || has_repeat(h.tokens, n);
      }
      CHECK(plain_repeats);  // the test could fail
    }
}

TEST_CASE("a forced prefix may repeat an n-gram", "[translator][no_repeat]") {
  for (bool sampling : {false, true}) {
    INFO((sampling ? "sampling" : "beam"));
    BeamOptions o = options(sampling);
    o.no_repeat_ngram_size = 2;
    const TargetPrefixes prefixes = {{4, 5, 4, 5}, {}, {7}};
    const auto out = search_three(cycling_scorer(0), o, prefixes);
    for (size_t s = 0; s < out.size(); ++s) {
      REQUIRE(!out[s].empty());
      for (const auto& h : out[s]) {
        const Tokens& p = prefixes[s];
        REQUIRE(h.tokens.size() >= p.size());
        CHECK(Tokens(h.tokens.begin(), h.tokens.begin() + static_cast<int64_t>(p.size())) == p);
        for (size_t l = std::max<size_t>(p.size(), 1); l < h.tokens.size(); ++l)
          CHECK_FALSE(repeats(Tokens(h.tokens.begin(), h.tokens.begin() + static_cast<int64_t>(l)), h.tokens[l], 2));
      }
    }
  }
}
