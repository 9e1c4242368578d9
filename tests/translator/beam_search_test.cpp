// Beam search on hand-built scorers (tests/translator/mock_scorer.h): the known best sequence that
// greedy misses, beam 1 == greedy argmax, the complete n-best list against brute-force enumeration,
// length penalties (arithmetic and effect), max/min length, batches equal to single sentences with
// finished sentences leaving the batch, word scores (each token's log-prob), and argument errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "mock_scorer.h"

using namespace moe;
using test::MockScorer;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
// V = 6: pad 0, unk 1, bos 2, eos 3, a 4, b 5.
constexpr int32_t kEos = 3, kA = 4, kB = 5;

std::vector<double> probs(std::initializer_list<std::pair<int, double>> p, int64_t v = 6) {
  std::vector<double> lp(static_cast<size_t>(v), -kInf);
  for (auto [t, pr] : p) lp[t] = std::log(pr);
  return lp;
}

using test::hashed;

std::vector<std::vector<Hypothesis>> search(MockScorer& m, const std::vector<int64_t>& src, const BeamOptions& o) {
  return beam_search(src, m.step_fn(), m.reorder_fn(), o);
}
}  // namespace

TEST_CASE("length penalty arithmetic", "[translator][beam]") {
  CHECK(normalized_score(-2.0, 4, LengthPenalty::fairseq, 1.0) == Approx(-0.5));
  CHECK(normalized_score(-2.0, 4, LengthPenalty::fairseq, 0.0) == Approx(-2.0));
  CHECK(normalized_score(-3.0, 9, LengthPenalty::fairseq, 0.5) == Approx(-1.0));
  CHECK(normalized_score(-2.0, 7, LengthPenalty::gnmt, 1.0) == Approx(-1.0));  // (5+7)/6 = 2
  CHECK(normalized_score(-2.0, 4, LengthPenalty::gnmt, 0.6) == Approx(-2.0 / std::pow(1.5, 0.6)));
  CHECK(normalized_score(-2.0, 1, LengthPenalty::gnmt, 0.6) == Approx(-2.0));  // (5+1)/6 = 1
  CHECK(parse_enum<LengthPenalty>("gnmt", "--length-penalty") == LengthPenalty::gnmt);
  CHECK_THROWS_WITH(parse_enum<LengthPenalty>("marian", "--length-penalty"),
                    Catch::Contains("'marian'") && Catch::Contains("fairseq"));
}

TEST_CASE("max output length", "[translator][beam]") {
  BeamOptions o;
  CHECK(max_output_length(10, o) == 200);  // fairseq defaults a = 0, b = 200
  o.max_positions = 64;
  CHECK(max_output_length(10, o) == 63);  // capped by the positions (step t reads position t)
  o.max_len_a = 1.5;
  o.max_len_b = 2;
  CHECK(max_output_length(5, o) == 9);
  CHECK(max_output_length(7, o) == 12);  // floor(12.5)
}

TEST_CASE("beam search finds the sequence greedy misses", "[translator][beam]") {
  // P(a)=.6 then P(</s>|a)=.4 -> .24; P(b)=.4 then P(</s>|b)=.9 -> .36.
  auto dist = [](int64_t, const std::vector<int32_t>& p) {
    if (p.empty()) return probs({{kA, .6}, {kB, .4}});
    if (p == std::vector<int32_t>{kA}) return probs({{kA, .3}, {kB, .3}, {kEos, .4}});
    if (p == std::vector<int32_t>{kB}) return probs({{kEos, .9}, {kA, .1}});
    return probs({{kEos, 1.0}});
  };
  BeamOptions o;
  o.beam = 1;
  MockScorer greedy(6, dist);
  auto g = search(greedy, {3}, o);
  REQUIRE(g[0].size() == 1);
  CHECK(g[0][0].tokens == std::vector<int32_t>{kA});
  CHECK(g[0][0].log_prob == Approx(std::log(.24)));

  o.beam = 2;
  o.n_best = 2;
  MockScorer beam(6, dist);
  auto b = search(beam, {3}, o);
  REQUIRE(b[0].size() == 2);
  CHECK(b[0][0].tokens == std::vector<int32_t>{kB});
  CHECK(b[0][0].log_prob == Approx(std::log(.36)));
  CHECK(b[0][0].score == Approx(std::log(.36) / 2));
  CHECK(b[0][1].tokens == std::vector<int32_t>{kA});
  CHECK(b[0][1].score == Approx(std::log(.24) / 2));
  // Rows: 1 sentence at the first step, then 2 beams; both finish at the second step.
  CHECK(beam.rows_per_step == std::vector<int64_t>{1, 2});
}

TEST_CASE("beam 1 equals greedy argmax decoding", "[translator][beam]") {
  const int64_t V = 11;
  const std::vector<int64_t> src = {1, 4, 9, 2, 6};
  BeamOptions o;
  o.beam = 1;
  o.max_len_a = 1.0;
  o.max_len_b = 3;
  o.min_len = 2;
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) {
    auto lp = hashed(s, p, V);
    lp[kEos] += 0.8 * static_cast<double>(p.size());  // make </s> likelier with length
    return lp;
  };
  MockScorer m(V, dist);
  auto got = search(m, src, o);
  for (size_t s = 0; s < src.size(); ++s) {
    std::vector<int32_t> prefix;
    double total = 0;
    const int64_t limit = max_output_length(src[s], o);
    for (;;) {
      auto lp = dist(static_cast<int64_t>(s), prefix);
      lp[0] = lp[2] = -kInf;
      if (static_cast<int64_t>(prefix.size()) < o.min_len) lp[kEos] = -kInf;
      if (static_cast<int64_t>(prefix.size()) >= limit)
        for (int64_t t = 0; t < V; ++t)
          if (t != kEos) lp[t] = -kInf;
      const auto best = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
      total += static_cast<float>(lp[best]);
      if (best == kEos) break;
      prefix.push_back(best);
    }
    INFO("sentence " << s);
    REQUIRE(got[s].size() == 1);
    CHECK(got[s][0].tokens == prefix);
    CHECK(got[s][0].log_prob == Approx(total).epsilon(1e-5));
    CHECK(static_cast<int64_t>(prefix.size()) >= o.min_len);
    CHECK(static_cast<int64_t>(prefix.size()) <= limit);
  }
}

TEST_CASE("a beam wider than the search space returns the full n-best list in order", "[translator][beam]") {
  // 3 real tokens (1, 4, 5; 0 and 2 are masked), outputs of 0..3 tokens: 1 + 3 + 9 + 27 = 40 hypotheses.
  const int64_t V = 6;
  for (auto [kind, lenpen] :
       {std::pair{LengthPenalty::fairseq, 1.0}, {LengthPenalty::fairseq, 0.0}, {LengthPenalty::gnmt, 0.6}}) {
    BeamOptions o;
    o.beam = 64;
    o.n_best = 64;
    o.min_len = 0;
    o.max_len_b = 3;
    o.penalty = kind;
    o.lenpen = lenpen;
    auto dist = [&](int64_t s, const std::vector<int32_t>& p) { return hashed(s, p, V); };
    MockScorer m(V, dist);
    auto got = search(m, {5}, o)[0];
    // Brute force: every sequence over {1, 4, 5} of length <= 3, then </s>.
    std::vector<Hypothesis> all;
    std::function<void(std::vector<int32_t>, double)> walk = [&](std::vector<int32_t> p, double lp) {
      const auto d = dist(0, p);
      const double with_eos = lp + static_cast<float>(d[kEos]);
      all.push_back({p, with_eos, normalized_score(with_eos, static_cast<int64_t>(p.size()) + 1, kind, lenpen)});
      if (p.size() == 3) return;
      for (int32_t t : {1, 4, 5}) {
        auto q = p;
        q.push_back(t);
        walk(q, lp + static_cast<float>(d[t]));
      }
    };
    walk({}, 0.0);
    std::sort(all.begin(), all.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    REQUIRE(got.size() == 40);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("rank " << i);
      CHECK(got[i].tokens == all[i].tokens);
      CHECK(got[i].score == Approx(all[i].score).epsilon(1e-5));
      if (i > 0) CHECK(got[i - 1].score >= got[i].score);
    }
  }
}

TEST_CASE("the length penalty decides between a short and a long hypothesis", "[translator][beam]") {
  // "a </s>": -0.5 -0.5 = -1.0 over 2 tokens; "b b b </s>": 4 x -0.4 = -1.6 over 4 tokens.
  auto dist = [](int64_t, const std::vector<int32_t>& p) {
    std::vector<double> lp(6, -kInf);
    if (p.empty()) {
      lp[kA] = -0.5;
      lp[kB] = -0.4;
    } else if (p[0] == kA) {
      lp[kEos] = -0.5;
    } else {
      lp[p.size() < 3 ? kB : kEos] = -0.4;
    }
    return lp;
  };
  BeamOptions o;
  o.beam = 2;
  o.n_best = 2;
  o.lenpen = 1.0;
  MockScorer m1(6, dist);
  auto r1 = search(m1, {4}, o)[0];
  REQUIRE(r1.size() == 2);
  CHECK(r1[0].tokens == std::vector<int32_t>{kB, kB, kB});
  CHECK(r1[0].score == Approx(-0.4));
  CHECK(r1[1].score == Approx(-0.5));
  o.lenpen = 0.0;
  MockScorer m0(6, dist);
  auto r0 = search(m0, {4}, o)[0];
  CHECK(r0[0].tokens == std::vector<int32_t>{kA});
  CHECK(r0[0].score == Approx(-1.0));
  CHECK(r0[1].score == Approx(-1.6));
}

TEST_CASE("maximum and minimum lengths", "[translator][beam]") {
  // </s> is very unlikely: the search runs to the maximum length and then must end.
  auto never_end = [](int64_t, const std::vector<int32_t>&) {
    return std::vector<double>{-1, -3, -1, -20, -0.5, -0.7};
  };
  BeamOptions o;
  o.beam = 3;
  o.max_len_b = 4;
  MockScorer m(6, never_end);
  auto r = search(m, {2}, o)[0];
  CHECK(r[0].tokens == std::vector<int32_t>{kA, kA, kA, kA});
  CHECK(r[0].log_prob == Approx(-2.0 - 20.0));
  o.max_positions = 3;  // caps the output at 2 tokens
  MockScorer m2(6, never_end);
  CHECK(search(m2, {2}, o)[0][0].tokens.size() == 2);
  // </s> is the likeliest token at once: min_len keeps it out of the first two steps.
  auto eager = [](int64_t, const std::vector<int32_t>&) { return std::vector<double>{-1, -3, -1, -0.1, -2, -2.5}; };
  o = BeamOptions{};
  o.beam = 2;
  o.min_len = 2;
  MockScorer m3(6, eager);
  auto e = search(m3, {2}, o)[0];
  CHECK(e[0].tokens == std::vector<int32_t>{kA, kA});
  o.min_len = 0;
  MockScorer m4(6, eager);
  CHECK(search(m4, {2}, o)[0][0].tokens.empty());
}

TEST_CASE("a batch decodes like single sentences and drops finished ones", "[translator][beam]") {
  const int64_t V = 9;
  const std::vector<int64_t> src = {2, 7, 1, 12};
  BeamOptions o;
  o.beam = 3;
  o.n_best = 3;
  o.max_len_a = 1.0;
  o.max_len_b = 0;
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) { return hashed(s, p, V); };
  MockScorer batch(V, dist);
  auto all = search(batch, src, o);
  for (size_t s = 0; s < src.size(); ++s) {
    // The same sentence alone: the scorer sees sentence id s through a shifted lookup.
    MockScorer one(V, [&](int64_t, const std::vector<int32_t>& p) { return hashed(static_cast<int64_t>(s), p, V); });
    auto alone = search(one, {src[s]}, o)[0];
    INFO("sentence " << s);
    REQUIRE(alone.size() == all[s].size());
    for (size_t h = 0; h < alone.size(); ++h) {
      CHECK(alone[h].tokens == all[s][h].tokens);
      CHECK(alone[h].score == all[s][h].score);
    }
  }
  // 4 sentences, then 4 x 3 rows; the rows shrink by multiples of the beam as sentences finish.
  const auto& rows = batch.rows_per_step;
  REQUIRE(rows.size() >= 3);
  CHECK(rows[0] == 4);
  CHECK(rows[1] == 12);
  for (size_t i = 2; i < rows.size(); ++i) {
    CHECK(rows[i] % 3 == 0);
    CHECK(rows[i] <= rows[i - 1]);
  }
  CHECK(rows.back() < 12);
  CHECK(static_cast<int64_t>(rows.size()) <= 13);  // the longest sentence: max length 12, + the </s> step
}

TEST_CASE("word scores are each token's log-prob, </s> last, and sum to the hypothesis's", "[translator][beam]") {
  const int64_t V = 9;
  const std::vector<int64_t> src = {2, 7, 1, 12};
  auto dist = [&](int64_t s, const std::vector<int32_t>& p) { return hashed(s, p, V); };
  for (int beam : {1, 3}) {
    BeamOptions o;
    o.beam = o.n_best = beam;
    o.unkpen = 0.5;  // counted in the scores as the search counts it
    o.unk_id = 1;
    MockScorer scorer(V, dist);
    const auto all = search(scorer, src, o);
    for (size_t s = 0; s < src.size(); ++s)
      for (const Hypothesis& h : all[s]) {
        INFO("beam " << beam << ", sentence " << s);
        REQUIRE(h.token_scores.size() == h.tokens.size() + 1);
        std::vector<int32_t> prefix;
        double sum = 0;
        for (size_t t = 0; t <= h.tokens.size(); ++t) {
          const int32_t token = t < h.tokens.size() ? h.tokens[t] : kEos;
          const double want = static_cast<float>(dist(static_cast<int64_t>(s), prefix)[token]) - (token == 1 ? 0.5 : 0);
          CHECK(h.token_scores[t] == Approx(want).margin(1e-5));
          sum += h.token_scores[t];
          prefix.push_back(token);
        }
        CHECK(sum == Approx(h.log_prob).margin(1e-4));
      }
  }
}

TEST_CASE("beam search argument errors", "[translator][beam]") {
  MockScorer m(6, [](int64_t, const std::vector<int32_t>&) { return std::vector<double>(6, -1.0); });
  BeamOptions o;
  o.beam = 2;
  o.n_best = 3;
  CHECK_THROWS_WITH(search(m, {1}, o), Catch::Contains("n-best 3") && Catch::Contains("beam = 2"));
  o.n_best = 1;
  o.beam = 0;
  CHECK_THROWS_WITH(search(m, {1}, o), Catch::Contains("beam must be at least 1"));
  o.beam = 2;
  auto bad = [](const Tensor&) { return Tensor::zeros(Shape{5, 6}, DType::f32, Device::cpu()); };
  CHECK_THROWS_WITH(beam_search(
                        {1, 2}, bad, [](const Tensor&) {}, o),
                    Catch::Contains("[5,6]") && Catch::Contains("2 rows"));
  CHECK(beam_search(
            {}, bad, [](const Tensor&) {}, o)
            .empty());
  // Scores that are NaN are an error, not a silent choice.
  auto nan = [](const Tensor& p) {
    return Tensor::from_vector(std::vector<float>(static_cast<size_t>(p.numel()) * 6, NAN), Shape{p.numel(), 6});
  };
  CHECK_THROWS_WITH(beam_search(
                        {1}, nan, [](const Tensor&) {}, o),
                    Catch::Contains("NaN"));
}
