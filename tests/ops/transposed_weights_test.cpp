// f32 weights held transposed (ops/transposed_weights.h): while a set is active, matmul and linear of a weight it
// holds (untransposed, transposed, under a batch of a^T) give what the weight itself gives, and a strided read of
// it from the copy gives the weight's values.
#include "ops/transposed_weights.h"

#include <catch2/catch.hpp>

#include "ops/matmul.h"
#include "ops/shape_ops.h"
#include "support/random_normal.h"

using namespace moe;

namespace {
std::vector<float> product(const Tensor& a, const Tensor& b, const Shape& out, bool ta, bool tb) {
  Tensor y = Tensor::empty(out, DType::f32, Device::cpu());
  matmul_forward(a, b, y, ta, tb);
  return y.to_vector<float>();
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
}
}  // namespace

TEST_CASE("transposed weights: matmul and linear read an active weight's copy", "[ops][transposed]") {
  const Tensor x = test::random_normal(Shape{70, 48}, 1), w = test::random_normal(Shape{48, 40}, 2, 0.2f);
  const Tensor wide = test::random_normal(Shape{40, 48}, 3, 0.2f), bias = test::random_normal(Shape{40}, 4);
  const Tensor xt = test::random_normal(Shape{3, 48, 5}, 5);  // a batch of a^T times the shared weight
  const std::vector<float> plain = product(x, w, Shape{70, 40}, false, false);
  const std::vector<float> plain_t = product(x, wide, Shape{70, 40}, false, true);
  const std::vector<float> plain_b = product(xt, w, Shape{3, 5, 40}, true, false);
  Tensor lin = Tensor::empty(Shape{70, 40}, DType::f32, Device::cpu());
  linear_forward(x, w, bias, lin);
  const std::vector<float> plain_lin = lin.to_vector<float>();

  TransposedWeights set;
  set.add(w);
  set.add(wide);
  REQUIRE(set.find(w));
  CHECK(set.find(w)->shape() == Shape{40, 48});
  CHECK(set.bytes() == 2 * 40 * 48 * sizeof(float));
  CHECK(set.find(x) == nullptr);
  {
    ActiveTransposedWeights active(&set);
    CHECK(active_transposed_weight(w) == set.find(w));
    Tensor scrambled = Tensor::from_vector(std::vector<float>(48 * 40, 0.f), w.shape());
    CHECK(active_transposed_weight(scrambled) == nullptr);
    // The weights' own values are no longer read: zero them (a released weight), the products stay.
    const std::vector<float> w_values = w.to_vector<float>(), wide_values = wide.to_vector<float>();
    Tensor(w).copy_from(Tensor::from_vector(std::vector<float>(w.numel(), 0.f), w.shape()));
    Tensor(wide).copy_from(Tensor::from_vector(std::vector<float>(wide.numel(), 0.f), wide.shape()));
    check_close(product(x, w, Shape{70, 40}, false, false), plain);
    check_close(product(x, wide, Shape{70, 40}, false, true), plain_t);
    check_close(product(xt, w, Shape{3, 5, 40}, true, false), plain_b);
    linear_forward(x, w, bias, lin);
    check_close(lin.to_vector<float>(), plain_lin);
    // A slice's strided read: rows 3..9 of w ([7, 40] = outer 1) and columns 10..15 of every row (outer 48).
    std::vector<float> rows(7 * 40), cols(48 * 6);
    copy_strided_from_transposed(*set.find(w), rows.data(), 1, 7 * 40, 48 * 40, 3 * 40);
    copy_strided_from_transposed(*set.find(w), cols.data(), 48, 6, 40, 10);
    for (int64_t r = 0; r < 7; ++r)
      for (int64_t c = 0; c < 40; ++c) CHECK(rows[size_t(r * 40 + c)] == w_values[size_t((r + 3) * 40 + c)]);
    for (int64_t r = 0; r < 48; ++r)
      for (int64_t c = 0; c < 6; ++c) CHECK(cols[size_t(r * 6 + c)] == w_values[size_t(r * 40 + 10 + c)]);
    CHECK(wide_values.size() == 40 * 48);
  }
  CHECK(active_transposed_weight(w) == nullptr);  // inactive again: the (zeroed) weight itself
  CHECK(product(x, w, Shape{70, 40}, false, false) == std::vector<float>(70 * 40, 0.f));
}
