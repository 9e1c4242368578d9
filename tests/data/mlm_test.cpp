// Masked-LM dynamic masking: specials and pad never selected, rates near 15% and 80/10/10,
// deterministic per (seed, step), different across steps. Tests lib/data/mlm.cpp.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/mlm.h"

using namespace moe;
using namespace moe::data;

TEST_CASE("mlm: 15% with 80/10/10, specials untouched", "[data]") {
  const int64_t B = 64, T = 512;
  std::vector<int32_t> x(static_cast<size_t>(B * T));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % T) >= 500 ? 0 : (i % 97 == 0 ? 3 : 10 + int32_t(i % 900));
  const Tensor tok = Tensor::from_vector<int32_t>(x, Shape{B, T});
  MlmOptions o;
  o.mask_id = 4;
  o.vocab_size = 1000;
  o.first_normal_id = 5;
  const auto b = mask_tokens(tok, o, 0);
  const auto in = b.input.to_vector<int32_t>(), tg = b.target.to_vector<int32_t>();
  const auto m = b.mask.to_vector<float>();
  CHECK(tg == x);
  int64_t eligible = 0, selected = 0, masked = 0, kept = 0, random = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool special = x[i] < 5;
    eligible += !special;
    if (special) {
      CHECK(m[i] == 0.f);
      CHECK(in[i] == x[i]);
      continue;
    }
    if (m[i] == 0.f) {
      CHECK(in[i] == x[i]);
      continue;
    }
    ++selected;
    if (in[i] == 4) ++masked;
    else if (in[i] == x[i]) ++kept;
    else {
      ++random;
      CHECK((in[i] >= 5 && in[i] < 1000));
    }
  }
  CHECK(b.tokens == selected);
  const double rate = double(selected) / double(eligible);
  CHECK(rate == Approx(0.15).margin(0.01));
  CHECK(double(masked) / selected == Approx(0.8).margin(0.02));
  CHECK(double(random) / selected == Approx(0.1).margin(0.02));  // a random draw can equal x: counted as kept
  CHECK(double(kept) / selected == Approx(0.1).margin(0.02));
  // deterministic per step, different across steps
  CHECK(mask_tokens(tok, o, 0).input.to_vector<int32_t>() == in);
  CHECK(mask_tokens(tok, o, 1).input.to_vector<int32_t>() != in);
  o.mask_id = -1;
  CHECK_THROWS_WITH(mask_tokens(tok, o, 0), Catch::Matchers::Contains("mask_id"));
  CHECK_THROWS_WITH(mask_tokens(Tensor::from_vector<float>({1.f}, Shape{1, 1}), o, 0),
                    Catch::Matchers::Contains("i32 [B, T]"));
}
