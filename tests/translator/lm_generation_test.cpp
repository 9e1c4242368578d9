// Text continuation by a causal LM (translator/lm_generation.h) with a tiny random Transformer LM: greedy
// continuations of prompts of different lengths (and none) in one batch equal argmax decoding recomputed over the
// whole sequence (no caches), with the prompt's tokens in the score; beam and sampled continuations score what
// teacher forcing gives their sequences (their word scores: its new tokens' log-probs), a prompt's samples do not
// depend on its batch, lengths stay within a * |prompt| + b new tokens; a prompt longer than the positions is an
// error. Both language models' decodings begin after </s> (not the search's <s>), as their training sentences do.
#include "translator/lm_generation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "models/lstm_lm.h"
#include "models/transformer_lm.h"
#include "tiny_model.h"

using namespace moe;

namespace {
/// tiny_lm() (tiny_model.h) with log-probabilities recomputed over whole sequences.
struct TinyLm {
  test::TinyModel m = test::tiny_lm();
  const Decoder& lm = *m.model->decoder();
  ParameterStore& params = *m.params;
  const int64_t vocab = m.vocab->size();
  /// test::lm_log_prob_rows of the model.
  std::vector<std::vector<double>> log_probs(const std::vector<int32_t>& seq) const {
    return test::lm_log_prob_rows(m, seq);
  }
  /// The log-probability of prompt + continuation + </s> by teacher forcing.
  double sequence_log_prob(const std::vector<int32_t>& prompt, const std::vector<int32_t>& continuation) const {
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), continuation.begin(), continuation.end());
    const auto rows = log_probs(seq);
    double total = 0;
    for (size_t t = 0; t <= seq.size(); ++t) total += rows[t][t < seq.size() ? seq[t] : 3];
    return total;
  }
};

const std::vector<std::vector<int32_t>> kPrompts = {{4, 9, 13}, {}, {7}, {5, 6, 7, 8, 9, 10}, {22, 22}};

TranslatorOptions options(int beam) {
  TranslatorOptions o;
  o.search.beam = o.search.n_best = beam;
  o.search.max_len_b = 5;
  o.max_tokens = 1000;
  return o;
}
}  // namespace

TEST_CASE("greedy continuations equal argmax decoding over the whole sequence", "[translator][generate]") {
  TinyLm m;
  TranslatorOptions o = options(1);
  o.search.min_len = 0;
  const auto got = generate_continuations(m.lm, m.params, Device::cpu(), o, kPrompts);
  REQUIRE(got.size() == kPrompts.size());
  for (size_t s = 0; s < kPrompts.size(); ++s) {
    INFO("prompt " << s);
    const std::vector<int32_t>& prompt = kPrompts[s];
    std::vector<int32_t> want;
    for (;;) {
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), want.begin(), want.end());
      std::vector<double> row = m.log_probs(seq).back();
      row[0] = row[2] = -INFINITY;  // <pad> and <s> are never chosen
      if (static_cast<int64_t>(want.size()) >= o.search.max_len_b)
        for (int64_t t = 0; t < m.vocab; ++t)
          if (t != 3) row[t] = -INFINITY;
      const auto best = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      if (best == 3) break;
      want.push_back(best);
    }
    REQUIRE(got[s].size() == 1);
    CHECK(got[s][0].tokens == want);
    CHECK(got[s][0].log_prob == Approx(m.sequence_log_prob(prompt, want)).margin(1e-4));
  }
}

TEST_CASE("beam and sampled continuations: forced-decoding scores, batch-independent samples, lengths",
          "[translator][generate]") {
  TinyLm m;
  for (bool sampling : {false, true}) {
    INFO("sampling " << sampling);
    TranslatorOptions o = options(3);
    o.search.sampling = sampling;
    o.search.max_len_a = 0.5;  // up to 0.5 |prompt| + 5 new tokens
    const auto got = generate_continuations(m.lm, m.params, Device::cpu(), o, kPrompts);
    for (size_t s = 0; s < kPrompts.size(); ++s) {
      INFO("prompt " << s);
      REQUIRE(got[s].size() == 3);
      const auto limit = static_cast<size_t>(std::floor(0.5 * static_cast<double>(kPrompts[s].size()) + 5));
      for (size_t h = 0; h < got[s].size(); ++h) {
        CHECK(got[s][h].tokens.size() <= limit);
        CHECK(got[s][h].log_prob == Approx(m.sequence_log_prob(kPrompts[s], got[s][h].tokens)).margin(1e-4));
        // word scores: the new tokens' and </s>'s log-probs, as teacher forcing gives them
        const Hypothesis& x = got[s][h];
        REQUIRE(x.token_scores.size() == x.tokens.size() + 1);
        std::vector<int32_t> seq = kPrompts[s];
        seq.insert(seq.end(), x.tokens.begin(), x.tokens.end());
        const auto rows = m.log_probs(seq);
        for (size_t t = 0; t <= x.tokens.size(); ++t) {
          const size_t at = kPrompts[s].size() + t;
          CHECK(x.token_scores[t] == Approx(rows[at][at < seq.size() ? seq[at] : 3]).margin(1e-4));
        }
        if (h > 0) CHECK(got[s][h - 1].score >= got[s][h].score);
      }
      if (!sampling) continue;
      TranslatorOptions small = o;
      small.max_tokens = 3;  // the prompt in a batch of its own
      const auto alone = generate_continuations(m.lm, m.params, Device::cpu(), small, {kPrompts[s]})[0];
      for (size_t h = 0; h < alone.size(); ++h) CHECK(alone[h].tokens == got[s][h].tokens);
    }
  }
}

TEST_CASE("a prompt longer than the model's positions is an error naming it", "[translator][generate]") {
  TinyLm m;
  const std::vector<int32_t> long_prompt(24, 5);
  CHECK_THROWS_WITH(generate_continuations(m.lm, m.params, Device::cpu(), options(1), {{4}, long_prompt}),
                    Catch::Contains("prompt 2 has 24 tokens") && Catch::Contains("allow 23"));
}

TEST_CASE("a language model's decoding begins after </s>, as its training stream's sentences do",
          "[translator][generate]") {
  for (const char* cfg : {"{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 2, dropout: 0.0}",
                          "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 2, dropout: 0.0}"}) {
    INFO(cfg);
    const test::TinyModel m = test::lm_of(cfg, 9);
    Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
    Builder b(g);
    // The search's first step gives <s>, then 7.
    const Decoder& d = *m.model->decoder();
    auto state = d.start(b, Tensor(), Tensor());
    std::vector<float> steps =
        d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{2}, Shape{1})).val().to_vector<float>();
    for (float x : d.step(b, *state, Tensor::from_vector(std::vector<int32_t>{7}, Shape{1})).val().to_vector<float>())
      steps.push_back(x);
    const auto whole = [&](int32_t first) {
      const Tensor in = Tensor::from_vector(std::vector<int32_t>{first, 7}, Shape{1, 2});
      if (const auto* t = dynamic_cast<const TransformerLm*>(m.model.get()))
        return t->log_probs(b, in).val().to_vector<float>();
      return dynamic_cast<const LstmLm&>(*m.model).log_probs(b, in).val().to_vector<float>();
    };
    const std::vector<float> after_eos = whole(3), after_bos = whole(2);
    REQUIRE(steps.size() == after_eos.size());
    double max_diff = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      CHECK(steps[i] == Approx(after_eos[i]).margin(1e-5));
      max_diff = std::max(max_diff, std::abs(static_cast<double>(after_bos[i]) - after_eos[i]));
    }
    CHECK(max_diff > 1e-3);  // <s> would have been another context
  }
}
