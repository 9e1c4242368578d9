// encode_by_length (models/encode_by_length.h): the groups follow the length rule and hold each row once; the
// memory of a mixed-length batch equals the whole batch's encoding on the real tokens and is zero past a short
// group's width; a Transformer translates such a batch as it translates each source alone.
#include "models/encode_by_length.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "tiny_model.h"
#include "translator/translator.h"

using namespace moe;

namespace {
/// 40 sources alternating `long_len` and `short_len` tokens of the tiny vocabulary's words (ids 4..23).
std::vector<std::vector<int32_t>> mixed_sources(int64_t long_len, int64_t short_len) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t s = 0; s < 40; ++s) {
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < (s % 2 ? short_len : long_len); ++t)
      ids.push_back(static_cast<int32_t>(4 + (s * 7 + t * 3) % 20));
    out.push_back(ids);
  }
  return out;
}
}  // namespace

TEST_CASE("length_groups: longest first; a row joins at 9/10 of the group's longest or while the group is small",
          "[translator]") {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 20; ++i) {
    lengths.push_back(10);
    lengths.push_back(30);
  }
  lengths.push_back(27);  // 9/10 of 30: joins the 30s
  for (int i = 0; i < 5; ++i) lengths.push_back(2);
  const auto groups = length_groups(lengths);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].size() == 21);
  CHECK(groups[1].size() == 20);
  CHECK(groups[2].size() == 5);
  std::vector<int> seen(lengths.size(), 0);
  for (const auto& g : groups)
    for (size_t i = 0; i < g.size(); ++i) {
      ++seen[static_cast<size_t>(g[i])];
      if (i > 0) CHECK(lengths[g[i]] <= lengths[g[i - 1]]);
    }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(length_groups({5, 1, 1}).size() == 1);  // 5 padded rows: the group takes the short rows too
  CHECK(length_groups({}).empty());
}

TEST_CASE("encode_by_length: the whole batch's memory on the real tokens, zero past a short group's width",
          "[translator]") {
  const test::TinyModel m = test::tiny_model(5, 64);
  const auto sources = mixed_sources(30, 5);
  const int64_t B = 40, S = 30;
  std::vector<int32_t> ids(B * S, 0);
  std::vector<uint8_t> mask(B * S, 0);
  for (int64_t r = 0; r < B; ++r)
    for (size_t t = 0; t < sources[r].size(); ++t) {
      ids[r * S + t] = sources[r][t];
      mask[r * S + t] = 1;
    }
  const Tensor src = Tensor::from_vector(ids, Shape{B, S}), src_mask = Tensor::from_vector(mask, Shape{B, S});
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  Builder b(g);
  const auto whole = m.net().encode(b, src, src_mask).val().to_vector<float>();
  const Expr grouped_expr =
      encode_by_length(b, src, src_mask, [&](const Tensor& s, const Tensor& k) { return m.net().encode(b, s, k); });
  REQUIRE(grouped_expr.shape() == Shape{B, S, 16});
  const auto grouped = grouped_expr.val().to_vector<float>();
  int64_t zeros = 0;
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < 16; ++d) {
        const size_t i = static_cast<size_t>((r * S + t) * 16 + d);
        if (t < static_cast<int64_t>(sources[r].size())) {
          INFO("row " << r << " position " << t);
          REQUIRE(grouped[i] == Approx(whole[i]).margin(1e-5));
        } else {
          zeros += grouped[i] == 0.f;
        }
      }
  CHECK(zeros == 20 * (S - 5) * 16);  // the short rows past their group's width of 5
}

TEST_CASE("a batch of long and short sources translates as each source alone", "[translator]") {
  const test::TinyModel m = test::tiny_model(13, 64, 4.f);
  const auto sources = mixed_sources(25, 3);
  TranslatorOptions o;
  o.search.beam = 4;
  o.search.max_len_b = 8;
  o.max_tokens = 100000;  // one batch of two length groups
  Translator tr(m.net(), *m.params, Device::cpu(), o);
  const auto batched = tr.translate(sources);
  for (size_t s = 0; s < sources.size(); ++s) {
    INFO("sentence " << s);
    const auto alone = tr.translate({sources[s]})[0];
    CHECK(alone[0].tokens == batched[s][0].tokens);
    CHECK(alone[0].score == Approx(batched[s][0].score).margin(1e-4));
  }
}
