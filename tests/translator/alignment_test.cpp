// Word alignments (translator/alignment.h, Decoder::alignment, AttentionInput::first_head): the formats as Marian
// writes them and the option's parsing; the first head's weights of multi-head attention (self and cross, padded,
// causal) and of MoA (each token's most weighted expert; expert 0 when dense) equal a softmax written out here from
// the parameters; a Transformer's alignment is its last decoder layer's first cross-attention head (changing that
// head's keys changes it, the other head's or the last FFN's do not); for every translation family the rows are
// distributions over the real source positions that no other sentence of the batch changes (align_pairs, one pair
// per batch and all in one); the translator gives each hypothesis (n-best, greedy, an ensemble: its first member)
// the alignment of its own tokens, and translates as without alignments. A language model refuses.
#include "translator/alignment.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "layers/moa.h"
#include "models/ensemble_decoder.h"
#include "tiny_model.h"
#include "translator/pair_alignment.h"
#include "translator/translator.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
Tensor random_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = n(rng);
  return Tensor::from_vector(v, shape);
}

/// softmax over the allowed keys of (x wq + bq)[:, head cols] . (m wk + bk)[:, head cols] / sqrt(dh), per batch row:
/// [B, Tq, Tk] in double. `q_cols`/`k_cols`: the first column of the head in the projections' outputs.
std::vector<double> reference_weights(const std::vector<float>& q, const std::vector<float>& k, int64_t B, int64_t Tq,
                                      int64_t Tk, int64_t q_width, int64_t k_width, int64_t dh,
                                      const std::function<int64_t(int64_t b, int64_t i)>& q_col, int64_t k_col,
                                      const std::function<bool(int64_t b, int64_t i, int64_t j)>& allowed) {
  std::vector<double> out(static_cast<size_t>(B * Tq * Tk), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i) {
      std::vector<double> s(static_cast<size_t>(Tk), -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < Tk; ++j) {
        if (!allowed(b, i, j)) continue;
        double dot = 0;
        for (int64_t e = 0; e < dh; ++e)
          dot +=
              static_cast<double>(q[(b * Tq + i) * q_width + q_col(b, i) + e]) * k[(b * Tk + j) * k_width + k_col + e];
        s[j] = dot / std::sqrt(static_cast<double>(dh));
        mx = std::max(mx, s[j]);
      }
      double z = 0;
      for (int64_t j = 0; j < Tk; ++j) z += std::isinf(s[j]) ? 0 : std::exp(s[j] - mx);
      for (int64_t j = 0; j < Tk; ++j) out[(b * Tq + i) * Tk + j] = std::isinf(s[j]) ? 0 : std::exp(s[j] - mx) / z;
    }
  return out;
}

/// x w + b for x [rows, in] and the dense layer `prefix` (prefix.w [in, out], prefix.b [out]) of `params`.
std::vector<float> project(const std::vector<float>& x, ParameterStore& params, const std::string& prefix) {
  const Tensor w = params.value(prefix + ".w");
  const int64_t in = w.shape()[0], out = w.shape()[1], rows = static_cast<int64_t>(x.size()) / in;
  const std::vector<float> wv = w.to_vector<float>(), bv = params.value(prefix + ".b").to_vector<float>();
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < out; ++c) {
      double acc = bv[c];
      for (int64_t i = 0; i < in; ++i) acc += static_cast<double>(x[r * in + i]) * wv[i * out + c];
      y[r * out + c] = static_cast<float>(acc);
    }
  return y;
}

std::vector<const std::vector<int32_t>*> pointers(const std::vector<std::vector<int32_t>>& v) {
  std::vector<const std::vector<int32_t>*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

/// The alignments [t][s] of (source, output) pairs on the CPU (translator/pair_alignment.h), in one batch.
std::vector<SoftAlignment> align_cpu(const Decoder& d, ParameterStore& params,
                                     const std::vector<std::vector<int32_t>>& sources,
                                     const std::vector<std::vector<int32_t>>& outputs) {
  return align_pairs(d, params, Device::cpu(), sources, outputs, PairScoreOptions{});
}

void check_close(const SoftAlignment& got, const SoftAlignment& want, double margin) {
  REQUIRE(got.size() == want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    REQUIRE(got[t].size() == want[t].size());
    for (size_t s = 0; s < got[t].size(); ++s) {
      INFO("output position " << t << ", source position " << s);
      CHECK(got[t][s] == Approx(want[t][s]).margin(margin));
    }
  }
}

/// Each row: (output length + 1) rows of (source length + 1) weights summing to 1.
void check_distributions(const SoftAlignment& a, size_t src_len, size_t out_len) {
  REQUIRE(a.size() == out_len + 1);
  for (const std::vector<float>& row : a) {
    REQUIRE(row.size() == src_len + 1);
    double sum = 0;
    for (float w : row) {
      CHECK(w >= 0.f);
      sum += w;
    }
    CHECK(sum == Approx(1.0).margin(1e-5));
  }
}

const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}};
const std::vector<std::vector<int32_t>> kOutputs = {{8, 6, 11}, {15, 16, 17, 18, 19}, {4}};
}  // namespace

TEST_CASE("alignment: Marian's formats and the option's values", "[translator][alignment]") {
  const SoftAlignment a = {{0.7f, 0.2f, 0.1f}, {0.1f, 0.3f, 0.6f}, {0.45f, 0.45f, 0.1f}};
  CHECK(format_alignment(a, AlignmentOutput::parse("hard", "--alignment")) == "0-0 2-1 0-2");  // ties: the first
  CHECK(format_alignment(a, AlignmentOutput::parse("0.25", "--alignment")) == "0-0 1-1 2-1 0-2 1-2");
  CHECK(format_alignment(a, AlignmentOutput::parse("1", "--alignment")) == "0-0 2-1 0-2");
  CHECK(format_alignment(a, AlignmentOutput::parse("soft", "--alignment")) == "0.7,0.2,0.1 0.1,0.3,0.6 0.45,0.45,0.1");
  CHECK(format_alignment({}, AlignmentOutput{}).empty());
  CHECK(alignment_links(a, AlignmentOutput::parse("0.25", "--alignment")) ==
        std::vector<data::WordLink>{{0, 0}, {1, 1}, {2, 1}, {0, 2}, {1, 2}});
  CHECK_THROWS_WITH(alignment_links(a, AlignmentOutput::parse("soft", "--alignment")), Contains("no links"));
  CHECK(AlignmentOutput::parse("0.5", "--alignment") == AlignmentOutput{AlignmentKind::threshold, 0.5f});
  for (const char* bad : {"1.5", "-0.1", "firm", "0.5x", ""})
    CHECK_THROWS_WITH(
        AlignmentOutput::parse(bad, "--alignment"),
        Contains("--alignment takes hard, soft or a threshold") && Contains(std::string("'") + bad + "'"));
}

TEST_CASE("alignment: links between words", "[translator][alignment]") {
  // source tokens of words 0 0 1 2 2 2, then </s>; output tokens of words 0 1 1, then </s>
  const TokenWords words{{0, 0, 1, 2, 2, 2, -1}, {0, 1, 1, -1}};
  const std::vector<data::WordLink> tokens = {{1, 0}, {0, 0}, {4, 1}, {5, 2}, {2, 2}, {6, 3}, {3, 3}, {6, 1}};
  CHECK(word_links(tokens, words) == std::vector<data::WordLink>{{0, 0}, {1, 1}, {2, 1}});  // once each, </s> gone
  CHECK_THROWS_WITH(word_links({{7, 0}}, words), Contains("past the pair's 7 source and 4 output positions"));
  AlignmentOutput o;
  o.words = true;
  const SoftAlignment a = {{0.1f, 0.6f, 0.3f}, {0.2f, 0.2f, 0.6f}, {0.9f, 0.05f, 0.05f}};  // 2 source tokens + </s>
  CHECK(format_alignment(a, o, TokenWords{{0, 0, -1}, {0, 1, -1}}) == "0-0");  // 1-0 -> 0-0, the rest at </s>
  o.kind = AlignmentKind::soft;
  CHECK_THROWS_WITH(format_alignment(a, o, {}), Contains("word links need hard or a threshold"));
  // a word list's tokens are words; </s> is -1
  const data::WordVocab vocab(std::vector<std::string>{"a", "b"});
  CHECK(token_words(vocab, {4, 5, 4}) == std::vector<int32_t>{0, 1, 2, -1});
  CHECK(token_words(vocab, {}) == std::vector<int32_t>{-1});
}

TEST_CASE("alignment: the first head of multi-head attention, written out", "[translator][alignment]") {
  const int64_t B = 2, Tq = 3, Tk = 4, d = 16, heads = 2, dh = d / heads;
  const Tensor x = random_tensor(Shape{B, Tq, d}, 1), mem = random_tensor(Shape{B, Tk, d}, 2);
  const std::vector<uint8_t> pad = {1, 1, 1, 1, 1, 1, 0, 0};
  ParameterStore params(Device::cpu(), 3);
  SECTION("cross-attention with key padding") {
    Graph g(Device::cpu(), &params, GraphOptions{.training = false});
    Expr w;
    AttentionInput in{.x = g.input(x), .memory = g.input(mem), .self_attention = false};
    in.key_padding = Tensor::from_vector(pad, Shape{B, Tk});
    in.first_head = &w;
    multi_head_attention(Builder(g).sub("att"), in, d, heads);
    const std::vector<float> got = w.val().to_vector<float>();
    const std::vector<double> want = reference_weights(
        project(x.to_vector<float>(), params, "att.q"), project(mem.to_vector<float>(), params, "att.k"), B, Tq, Tk, d,
        d, dh, [](int64_t, int64_t) { return int64_t{0}; }, 0,
        [&](int64_t b, int64_t, int64_t j) { return pad[b * Tk + j] != 0; });
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
  }
  SECTION("causal self-attention") {
    Graph g(Device::cpu(), &params, GraphOptions{.training = false});
    Expr w;
    AttentionInput in{.x = g.input(x), .memory = g.input(x), .causal = true};
    in.first_head = &w;
    multi_head_attention(Builder(g).sub("self"), in, d, heads);
    const std::vector<float> got = w.val().to_vector<float>();
    const std::vector<float> xs = x.to_vector<float>();
    const std::vector<double> want = reference_weights(
        project(xs, params, "self.q"), project(xs, params, "self.k"), B, Tq, Tq, d, d, dh,
        [](int64_t, int64_t) { return int64_t{0}; }, 0, [](int64_t, int64_t i, int64_t j) { return j <= i; });
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
  }
  SECTION("without first_head nothing is recorded, and a decoding cache refuses") {
    Graph g(Device::cpu(), &params, GraphOptions{.training = false});
    KVCache cache;
    Expr w;
    AttentionInput in{.x = g.input(x), .memory = g.input(mem), .self_attention = false, .cache = &cache};
    multi_head_attention(Builder(g).sub("att"), in, d, heads);
    in.first_head = &w;
    CHECK_THROWS_WITH(multi_head_attention(Builder(g).sub("att"), in, d, heads), Contains("teacher-forced"));
  }
}

TEST_CASE("alignment: MoA's first head is each token's most weighted expert", "[translator][alignment]") {
  const int64_t B = 2, Tq = 3, Tk = 4, d = 16;
  const Tensor x = random_tensor(Shape{B, Tq, d}, 4), mem = random_tensor(Shape{B, Tk, d}, 5);
  const std::vector<uint8_t> pad = {1, 1, 1, 0, 1, 1, 1, 1};
  for (const char* yaml :
       {"{type: moa, k: 2, experts: 4, head_dim: 8}", "{type: moa, k: 3, experts: 3, head_dim: 8}"}) {
    SECTION(yaml) {
      const MoaOptions o = MoaOptions::from_yaml(YAML::Load(yaml), 2);
      ParameterStore params(Device::cpu(), 6);
      Graph g(Device::cpu(), &params, GraphOptions{.training = false});
      const MoaWeights mw = moa_weights(Builder(g).sub("moa"), d, o);
      Expr w;
      AttentionInput in{.x = g.input(x), .memory = g.input(mem), .self_attention = false};
      in.key_padding = Tensor::from_vector(pad, Shape{B, Tk});
      in.first_head = &w;
      const MoaResult r = moa_attention(in, mw, o);
      const std::vector<float> got = w.val().to_vector<float>();
      // expert e's queries x A_e, side by side: [B * Tq, E * D]; keys m W_K [B * Tk, D]
      const int64_t E = o.experts, D = o.head_dim;
      const std::vector<float> a = mw.q.val().to_vector<float>(), wk = mw.k.val().to_vector<float>();
      const std::vector<float> xs = x.to_vector<float>(), ms = mem.to_vector<float>();
      std::vector<float> q(static_cast<size_t>(B * Tq * E * D)), k(static_cast<size_t>(B * Tk * D));
      for (int64_t n = 0; n < B * Tq; ++n)
        for (int64_t e = 0; e < E; ++e)
          for (int64_t c = 0; c < D; ++c) {
            double acc = 0;
            for (int64_t i = 0; i < d; ++i) acc += static_cast<double>(xs[n * d + i]) * a[(e * d + i) * D + c];
            q[(n * E + e) * D + c] = static_cast<float>(acc);
          }
      for (int64_t n = 0; n < B * Tk; ++n)
        for (int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (int64_t i = 0; i < d; ++i) acc += static_cast<double>(ms[n * d + i]) * wk[i * D + c];
          k[n * D + c] = static_cast<float>(acc);
        }
      const std::vector<int32_t> experts = r.routing.experts.val().to_vector<int32_t>();  // [N, k], best first
      const std::vector<double> want = reference_weights(
          q, k, B, Tq, Tk, E * D, D, D,
          [&](int64_t b, int64_t i) { return o.dense() ? int64_t{0} : experts[(b * Tq + i) * o.k] * D; }, 0,
          [&](int64_t b, int64_t, int64_t j) { return pad[b * Tk + j] != 0; });
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
    }
  }
}

TEST_CASE("alignment: a Transformer aligns with its last decoder layer's first cross-attention head",
          "[translator][alignment]") {
  test::TinyModel m = test::tiny_model(7);
  const std::vector<SoftAlignment> base = align_cpu(m.net(), *m.params, kSources, kOutputs);
  // Scales columns [first, first + count) of parameter `name` by 1.5; whether the alignment changed.
  auto changes = [&](const std::string& name, int64_t first, int64_t count) {
    Tensor p = m.params->value(name);
    const std::vector<float> old = p.to_vector<float>();
    std::vector<float> v = old;
    const int64_t cols = p.shape()[-1];
    for (size_t i = 0; i < v.size(); ++i)
      if (const int64_t c = static_cast<int64_t>(i) % cols; c >= first && c < first + count) v[i] *= 1.5f;
    p.copy_from(Tensor::from_vector(v, p.shape()));
    const std::vector<SoftAlignment> now = align_cpu(m.net(), *m.params, kSources, kOutputs);
    p.copy_from(Tensor::from_vector(old, p.shape()));
    double diff = 0;
    for (size_t i = 0; i < now.size(); ++i)
      for (size_t t = 0; t < now[i].size(); ++t)
        for (size_t s = 0; s < now[i][t].size(); ++s)
          diff = std::max(diff, std::abs(double(now[i][t][s] - base[i][t][s])));
    return diff > 1e-4;
  };
  // d 16, 2 heads of 8: head 0 is columns 0..7 of the key projection
  CHECK(changes("decoder.l1.cross_attn.k.w", 0, 8));
  CHECK_FALSE(changes("decoder.l1.cross_attn.k.w", 8, 8));
  CHECK_FALSE(changes("decoder.l1.ffn.fc1.w", 0, 32));
  CHECK(changes("decoder.l0.cross_attn.v.w", 0, 16));  // an earlier layer's output feeds the last layer's queries
}

TEST_CASE("alignment: every family's rows are distributions over its own source", "[translator][alignment]") {
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 3);
      const std::vector<SoftAlignment> batch = align_cpu(m.net(), *m.params, kSources, kOutputs);
      // each pair alone (a batch of at most 1 token: one pair per batch), without the others' padding
      int batches = 0;
      const std::vector<SoftAlignment> alone = align_pairs(m.net(), *m.params, Device::cpu(), kSources, kOutputs,
                                                           {.max_tokens = 1, .after_batch = [&] { ++batches; }});
      CHECK(batches == 3);
      for (size_t i = 0; i < kSources.size(); ++i) {
        INFO("sentence " << i);
        check_distributions(batch[i], kSources[i].size(), kOutputs[i].size());
        check_close(alone[i], batch[i], 2e-5);  // the same weights
      }
    }
  }
  SECTION("a language model has no source to align with") {
    const test::TinyModel lm = test::tiny_lm();
    Graph g(Device::cpu(), lm.params.get(), GraphOptions{.training = false});
    std::vector<std::vector<Hypothesis>> found = {{Hypothesis{.tokens = {5}}}};
    CHECK_THROWS_WITH(align_hypotheses(*lm.model->decoder(), Builder(g), pointers({{4}}), found),
                      Contains("cannot give word alignments"));
  }
}

TEST_CASE("alignment: the translator aligns each hypothesis with its own tokens", "[translator][alignment]") {
  const test::TinyModel a = test::tiny_model(5, 32, 3.f), b = test::tiny_model(6, 32, 3.f);
  auto translate = [&](const Decoder& d, ParameterStore& params, int beam, int n_best, bool alignment) {
    TranslatorOptions o;
    o.search.beam = beam;
    o.search.n_best = n_best;
    o.search.max_len_b = 8;
    o.alignment = alignment;
    return Translator(d, params, Device::cpu(), o).translate(kSources);
  };
  const EnsembleDecoder ensemble({{&a.net(), a.params.get(), 1.0, "a"}, {&b.net(), b.params.get(), 1.0, "b"}});
  struct Case {
    const char* name;
    const Decoder* decoder;
    int beam, n_best;
  };
  for (const Case& c : {Case{"beam 4, 3-best", &a.net(), 4, 3}, Case{"greedy", &a.net(), 1, 1},
                        Case{"ensemble: its first member's", &ensemble, 3, 2}}) {
    SECTION(c.name) {
      const auto plain = translate(*c.decoder, *a.params, c.beam, c.n_best, false);
      const auto aligned = translate(*c.decoder, *a.params, c.beam, c.n_best, true);
      REQUIRE(aligned.size() == kSources.size());
      for (size_t i = 0; i < kSources.size(); ++i) {
        REQUIRE(aligned[i].size() == plain[i].size());
        for (size_t h = 0; h < aligned[i].size(); ++h) {
          INFO("sentence " << i << ", hypothesis " << h);
          CHECK(aligned[i][h].tokens == plain[i][h].tokens);
          CHECK(plain[i][h].alignment.empty());
          // the first member's alignment of this output, computed alone
          check_close(aligned[i][h].alignment, align_cpu(a.net(), *a.params, {kSources[i]}, {aligned[i][h].tokens})[0],
                      2e-5);
        }
      }
    }
  }
}
