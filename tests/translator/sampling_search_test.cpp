// Sampling search (translator/sampling_search.h, token_sampler.h) on hand-built scorers (mock_scorer.h): a draw
// over a grid of uniform numbers reproduces the distribution exactly (temperature, top-k, top-p, excluded
// tokens); each sample's log-prob is the sum of the scorer's log-probs of its tokens and </s>, which are its word
// scores; samples are
// reproducible from the seed and the stream and do not depend on the batch; top-k 1 is greedy search; the
// first tokens of many samples follow the model's distribution; the draws of a step split over the threads give
// the same samples as one thread; lengths, prefixes and argument errors.
#include "translator/sampling_search.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>

#include "common/cpu_threads.h"
#include "mock_scorer.h"
#include "translator/token_sampler.h"

using namespace moe;
using test::hashed;
using test::MockScorer;

namespace {
const float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int32_t kPad = 0, kBos = 2, kEos = 3;

/// How often each token is drawn for the N uniform numbers (i + 0.5) / N: the draw's quantiles.
std::vector<int64_t> grid_counts(const std::vector<float>& logp, const SamplingRule& rule, int64_t n) {
  std::vector<int64_t> count(logp.size(), 0);
  SamplerScratch scratch;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = sample_token(logp.data(), static_cast<int64_t>(logp.size()), rule, (i + 0.5) / n, scratch);
    REQUIRE(t >= 0);
    ++count[static_cast<size_t>(t)];
  }
  return count;
}

/// Each token's count equals its probability times n, within one (p: unnormalised weights).
void check_counts(const std::vector<int64_t>& count, std::vector<double> p, int64_t n) {
  double z = 0;
  for (double x : p) z += x;
  for (size_t t = 0; t < p.size(); ++t) {
    INFO("token " << t);
    CHECK(std::abs(static_cast<double>(count[t]) - p[t] / z * static_cast<double>(n)) <= 1.0);
  }
}

std::vector<std::vector<Hypothesis>> sample(MockScorer& m, const std::vector<int64_t>& src,
                                            const std::vector<uint64_t>& streams, const BeamOptions& o,
                                            const TargetPrefixes& prefixes = {}) {
  return sampling_search(src, streams, m.step_fn(), m.reorder_fn(), o, prefixes);
}

BeamOptions sampling_options(int beam) {
  BeamOptions o;
  o.sampling = true;
  o.beam = o.n_best = beam;
  o.max_len_a = 1.0;
  o.max_len_b = 2;
  o.min_len = 1;
  return o;
}
}  // namespace

TEST_CASE("a draw reproduces the distribution: temperature, top-k, top-p, excluded tokens", "[translator][sampling]") {
  const std::vector<double> p = {0.05, 0.1, 0.2, 0.3, 0.15, 0.2};
  std::vector<float> logp;
  for (double x : p) logp.push_back(static_cast<float>(std::log(x)));
  const int64_t n = 20000;
  check_counts(grid_counts(logp, {}, n), p, n);
  // temperature T: p^(1/T)
  std::vector<double> sharp, flat;
  for (double x : p) sharp.push_back(std::pow(x, 2.0)), flat.push_back(std::pow(x, 0.5));
  check_counts(grid_counts(logp, {.temperature = 0.5}, n), sharp, n);
  check_counts(grid_counts(logp, {.temperature = 2.0}, n), flat, n);
  // a temperature so small that 1 / T is past a float's range: the most probable token only (was NaN weights)
  check_counts(grid_counts(logp, {.temperature = 1e-300}, n), {0, 0, 0, 1, 0, 0}, n);
  // top-k 2: tokens 3 (0.3) and 2 (0.2; ties with 5 broken by the lower id)
  check_counts(grid_counts(logp, {.topk = 2}, n), {0, 0, 0.2, 0.3, 0, 0}, n);
  // top-p: the smallest head of 3, 2, 5, 4, 1, 0 whose mass reaches p
  check_counts(grid_counts(logp, {.topp = 0.49}, n), {0, 0, 0.2, 0.3, 0, 0}, n);
  check_counts(grid_counts(logp, {.topp = 0.51}, n), {0, 0, 0.2, 0.3, 0, 0.2}, n);
  check_counts(grid_counts(logp, {.topp = 0.01}, n), {0, 0, 0, 0.3, 0, 0}, n);
  // top-k, then top-p of what it kept (0.7 of 0.3 + 0.2 + 0.2)
  check_counts(grid_counts(logp, {.topk = 3, .topp = 0.7}, n), {0, 0, 0.2, 0.3, 0, 0}, n);
  // -inf entries are never drawn; none finite: no token
  std::vector<float> masked = logp;
  masked[3] = masked[5] = kNegInf;
  check_counts(grid_counts(masked, {}, n), {0.05, 0.1, 0.2, 0, 0.15, 0}, n);
  SamplerScratch scratch;
  const std::vector<float> none(4, kNegInf);
  CHECK(sample_token(none.data(), 4, {}, 0.5, scratch) == -1);
  // top-p over many candidates (the selection halves its range several times): 300 equal tokens (ties: lower ids
  // first), p 0.499 keeps 150; and 1,000 tokens of distinct weights against the kept set by a full sort
  const std::vector<float> uniform(300, -std::log(300.f));
  const auto wide = grid_counts(uniform, {.topp = 0.499}, 1500);
  for (size_t t = 0; t < wide.size(); ++t) CHECK(wide[t] == (t < 150 ? 10 : 0));
  std::vector<float> spread(1000);
  std::vector<std::pair<float, int32_t>> by_weight;
  for (int32_t t = 0; t < 1000; ++t) {
    spread[t] = -0.01f * static_cast<float>((t * 379) % 1000);  // a permutation of 0 .. -9.99
    by_weight.emplace_back(spread[t], t);
  }
  std::sort(by_weight.begin(), by_weight.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double z = 0, mass = 0;
  for (float x : spread) z += std::exp(static_cast<double>(x));
  std::vector<bool> in_nucleus(1000, false);
  for (const auto& [x, t] : by_weight) {
    if (mass >= 0.8 * z) break;
    mass += std::exp(static_cast<double>(x));
    in_nucleus[static_cast<size_t>(t)] = true;
  }
  const auto drawn = grid_counts(spread, {.topp = 0.8}, 100000);
  for (size_t t = 0; t < drawn.size(); ++t) {
    INFO("token " << t);
    if (!in_nucleus[t]) CHECK(drawn[t] == 0);
    if (in_nucleus[t]) CHECK(std::abs(static_cast<double>(drawn[t]) - std::exp(spread[t]) / mass * 1e5) <= 1.0);
  }
}

TEST_CASE("samples sum the scorer's log-probs, are reproducible and do not depend on the batch",
          "[translator][sampling]") {
  const int64_t V = 9;
  const std::vector<int64_t> src = {2, 7, 1, 5};
  const std::vector<uint64_t> streams = {11, 12, 13, 14};
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) {
    auto lp = hashed(s, p, V);
    lp[kEos] += 0.5 * static_cast<double>(p.size());  // </s> likelier with length (not normalised: a scorer's choice)
    return lp;
  };
  BeamOptions o = sampling_options(4);
  o.temperature = 1.5;
  MockScorer batch(V, dist);
  const auto all = sample(batch, src, streams, o);
  for (size_t s = 0; s < src.size(); ++s) {
    INFO("sentence " << s);
    REQUIRE(all[s].size() == 4);
    const int64_t limit = max_output_length(src[s], o);
    for (size_t h = 0; h < all[s].size(); ++h) {
      const Hypothesis& x = all[s][h];
      CHECK(static_cast<int64_t>(x.tokens.size()) >= o.min_len);
      CHECK(static_cast<int64_t>(x.tokens.size()) <= limit);
      double total = 0;
      std::vector<int32_t> prefix;
      REQUIRE(x.token_scores.size() == x.tokens.size() + 1);  // word scores: each token's, </s> last
      for (size_t t = 0; t <= x.tokens.size(); ++t) {
        const int32_t token = t < x.tokens.size() ? x.tokens[t] : kEos;
        CHECK(token != kPad);
        CHECK(token != kBos);
        const float log_prob = static_cast<float>(dist(static_cast<int64_t>(s), prefix)[token]);
        CHECK(x.token_scores[t] == log_prob);
        total += log_prob;
        prefix.push_back(token);
      }
      CHECK(x.log_prob == Approx(total).epsilon(1e-6));
      CHECK(x.score == normalized_score(x.log_prob, static_cast<int64_t>(x.tokens.size()) + 1, o.penalty, o.lenpen));
      if (h > 0) CHECK(all[s][h - 1].score >= x.score);
    }
    // The same sentence alone, with its stream: the same samples.
    MockScorer one(V, [&](int64_t, const std::vector<int32_t>& p) { return dist(static_cast<int64_t>(s), p); });
    const auto alone = sample(one, {src[s]}, {streams[s]}, o)[0];
    REQUIRE(alone.size() == all[s].size());
    for (size_t h = 0; h < alone.size(); ++h) {
      CHECK(alone[h].tokens == all[s][h].tokens);
      CHECK(alone[h].log_prob == all[s][h].log_prob);
    }
  }
  // The samples of one input differ from each other, and another seed draws others.
  CHECK(std::any_of(all.begin(), all.end(), [](const auto& list) { return list[0].tokens != list[1].tokens; }));
  MockScorer again(V, dist);
  CHECK(sample(again, src, streams, o)[0][0].tokens == all[0][0].tokens);
  o.seed = 2;
  MockScorer other(V, dist);
  const auto reseeded = sample(other, src, streams, o);
  bool differs = false;
  for (size_t s = 0; s < src.size(); ++s)
    for (size_t h = 0; h < 4; ++h) differs |= reseeded[s][h].tokens != all[s][h].tokens;
  CHECK(differs);
  // 4 inputs, then 4 x 4 rows, shrinking by whole inputs as their last samples end.
  const auto& rows = batch.rows_per_step;
  REQUIRE(rows.size() >= 2);
  CHECK(rows[0] == 4);
  CHECK(rows[1] == 16);
  for (size_t i = 2; i < rows.size(); ++i) CHECK((rows[i] % 4 == 0 && rows[i] <= rows[i - 1]));
}

TEST_CASE("samples do not depend on the thread count", "[translator][sampling]") {
  // A vocabulary large enough that a step's draws split over the threads (parallel_for's share per thread).
  const int64_t V = kElementsPerThread / 2;
  const std::vector<int64_t> src = {6, 3, 9};
  const std::vector<uint64_t> streams = {5, 6, 7};
  BeamOptions o = sampling_options(4);
  o.sampling_topp = 0.95;
  o.no_repeat_ngram_size = 2;
  std::vector<std::vector<Hypothesis>> out[2];
  const int saved = cpu_threads();
  for (int threads : {1, 3}) {
    set_cpu_threads(threads);
    MockScorer m(V, [&](int64_t s, const std::vector<int32_t>& p) { return hashed(s, p, V); });
    out[threads == 3] = sample(m, src, streams, o);
  }
  set_cpu_threads(saved);
  for (size_t s = 0; s < src.size(); ++s) {
    REQUIRE(out[0][s].size() == 4);
    REQUIRE(out[1][s].size() == out[0][s].size());
    for (size_t h = 0; h < out[0][s].size(); ++h) {
      CHECK(out[1][s][h].tokens == out[0][s][h].tokens);
      CHECK(out[1][s][h].log_prob == out[0][s][h].log_prob);
    }
  }
}

TEST_CASE("top-k 1 sampling is greedy search; n-best keeps the best samples", "[translator][sampling]") {
  const int64_t V = 11;
  const std::vector<int64_t> src = {1, 4, 9, 2, 6};
  const std::vector<uint64_t> streams = {1, 2, 3, 4, 5};
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) {
    auto lp = hashed(s, p, V);
    lp[kEos] += 0.8 * static_cast<double>(p.size());
    return lp;
  };
  BeamOptions o = sampling_options(3);
  o.sampling_topk = 1;
  o.n_best = 2;
  o.min_len = 2;
  MockScorer m(V, dist);
  const auto got = sample(m, src, streams, o);
  BeamOptions g = o;
  g.sampling = false;
  g.beam = g.n_best = 1;
  MockScorer greedy_scorer(V, dist);
  const auto greedy = beam_search(src, greedy_scorer.step_fn(), greedy_scorer.reorder_fn(), g);
  for (size_t s = 0; s < src.size(); ++s) {
    INFO("sentence " << s);
    REQUIRE(got[s].size() == 2);
    for (const Hypothesis& x : got[s]) {
      CHECK(x.tokens == greedy[s][0].tokens);
      CHECK(x.log_prob == Approx(greedy[s][0].log_prob).epsilon(1e-6));
    }
  }
}

TEST_CASE("the first tokens of many samples follow the model's distribution", "[translator][sampling]") {
  // One input, 4,000 samples of one token (the maximum length 1, then </s> is forced); p over tokens 4..7.
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  MockScorer m(8, [&](int64_t, const std::vector<int32_t>& prefix) {
    std::vector<double> lp(8, std::log(0.05));  // pad, unk, bos, eos: excluded or not reachable but for unk
    for (size_t t = 0; t < p.size(); ++t) lp[4 + t] = std::log(p[t] * 0.8);
    lp[1] = std::log(0.2 * 0.8);  // unk is drawn like any token
    if (!prefix.empty()) lp[kEos] = 0;
    return lp;
  });
  BeamOptions o = sampling_options(4000);
  o.max_len_a = 0;
  o.max_len_b = 1;
  o.min_len = 0;  // </s> (0.05) may be drawn first too
  const auto got = sample(m, {3}, {99}, o)[0];
  std::map<int32_t, int64_t> count;
  for (const Hypothesis& x : got) ++count[x.tokens.empty() ? kEos : x.tokens[0]];
  CHECK(count[kPad] == 0);
  CHECK(count[kBos] == 0);
  // weights: unk 0.16, eos 0.05, tokens 0.08 .. 0.32: each within 4 standard deviations of 4,000 draws
  const std::map<int32_t, double> want = {{1, 0.16}, {kEos, 0.05}, {4, 0.08}, {5, 0.16}, {6, 0.24}, {7, 0.32}};
  double z = 0;
  for (const auto& [t, w] : want) z += w;
  for (const auto& [t, w] : want) {
    INFO("token " << t);
    const double q = w / z, n = 4000;
    CHECK(std::abs(static_cast<double>(count[t]) - q * n) <= 4 * std::sqrt(n * q * (1 - q)));
  }
}

TEST_CASE("sampling follows forced prefixes and the maximum length", "[translator][sampling]") {
  const int64_t V = 9;
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) {
    auto lp = hashed(s, p, V);
    lp[kEos] = -30;  // </s> only where forced
    return lp;
  };
  BeamOptions o = sampling_options(3);
  o.max_len_a = 0;
  o.max_len_b = 4;
  MockScorer m(V, dist);
  const auto got = sample(m, {5, 5}, {1, 2}, o, {{7, 8}, {}});
  for (size_t s = 0; s < 2; ++s)
    for (const Hypothesis& x : got[s]) {
      INFO("sentence " << s);
      CHECK(x.tokens.size() == 4);  // </s> forced at the maximum length
      if (s == 0) CHECK((x.tokens[0] == 7 && x.tokens[1] == 8));
    }
}

TEST_CASE("sampling argument errors", "[translator][sampling]") {
  MockScorer m(6, [](int64_t, const std::vector<int32_t>&) { return std::vector<double>(6, -1.0); });
  BeamOptions o = sampling_options(2);
  o.n_best = 3;
  CHECK_THROWS_WITH(sample(m, {1}, {1}, o), Catch::Contains("n-best 3") && Catch::Contains("beam = 2"));
  o.n_best = 1;
  o.temperature = 0;
  CHECK_THROWS_WITH(sample(m, {1}, {1}, o), Catch::Contains("temperature must be > 0"));
  o.temperature = 1;
  CHECK_THROWS_WITH(sample(m, {1, 2}, {1}, o), Catch::Contains("1 streams for 2 inputs"));
  CHECK(sample(m, {}, {}, o).empty());
  auto nan = [](const Tensor& p) {
    return Tensor::from_vector(std::vector<float>(static_cast<size_t>(p.numel()) * 6, NAN), Shape{p.numel(), 6});
  };
  CHECK_THROWS_WITH(sampling_search(
                        {1}, {1}, nan, [](const Tensor&) {}, o),
                    Catch::Contains("NaN"));
  // the stream of an input is a function of its tokens
  CHECK(sample_stream({4, 5}) == sample_stream({4, 5}));
  CHECK(sample_stream({4, 5}) != sample_stream({5, 4}));
}
