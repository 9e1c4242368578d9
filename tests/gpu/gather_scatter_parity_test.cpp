// CPU-vs-CUDA parity of index_select / index_add / gather_last / scatter_add_last in f32, bf16 and
// f16 (repeated indices, vector and scalar paths), index_select of u8 / i64 / f32 rows in 1- and
// 8-byte units, and the device flag for out-of-range indices.
#include <catch2/catch.hpp>

#include "graph/expr/gather_scatter.h"
#include "ops/gather_scatter.h"
#include "ops/index_errors.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor random_ids(int64_t n, int32_t bound, uint32_t seed, Shape shape) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int32_t>((seed = seed * 1664525u + 1013904223u) >> 8) % bound;
  return Tensor::from_vector(v, shape);
}
}  // namespace

TEST_CASE("gather_scatter parity", "[gpu][gather_scatter]") {
  for (int64_t R : {64, 7}) {  // 16-byte rows (vector copies, float4 atomics) and odd rows
    Tensor x = test::random_tensor(Shape{50, R}, 1), src = test::random_tensor(Shape{300, R}, 2);
    Tensor idx = random_ids(300, 50, 3, Shape{300});
    for (DType dt : test::kFloatTypes) {
      INFO("R " << R << " " << dtype_name(dt));
      const double bar = test::bar(dt, 1e-6, 2e-2);
      auto r = test::parity({x, idx}, [](Graph&, const std::vector<Expr>& in) { return index_select(in[0], in[1]); },
                            dt, {0});
      CHECK(r.forward < bar);
      CHECK(r.backward < bar);
      r = test::parity({x, idx, src},
                       [](Graph&, const std::vector<Expr>& in) { return index_add(in[0], in[1], in[2]); }, dt, {0, 2});
      CHECK(r.forward < bar);
      CHECK(r.backward < bar);
    }
  }
  Tensor v = test::random_tensor(Shape{3, 17, 1000}, 4), s = test::random_tensor(Shape{3, 17, 8}, 5);
  Tensor k = random_ids(3 * 17 * 8, 1000, 6, Shape{3, 17, 8});
  for (DType dt : test::kFloatTypes) {
    INFO(dtype_name(dt));
    const double bar = test::bar(dt, 1e-6, 2e-2);
    auto r =
        test::parity({v, k}, [](Graph&, const std::vector<Expr>& in) { return gather_last(in[0], in[1]); }, dt, {0});
    CHECK(r.forward < bar);
    CHECK(r.backward < bar);
    r = test::parity({v, k, s},
                     [](Graph&, const std::vector<Expr>& in) { return scatter_add_last(in[0], in[1], in[2]); }, dt,
                     {0, 2});
    CHECK(r.forward < bar);
    CHECK(r.backward < bar);
  }
}

TEST_CASE("index_select parity: 1- and 8-byte units", "[gpu][gather_scatter]") {
  // Row copies move the widest unit dividing the row's bytes: u8 rows of 7 bytes one byte at a time,
  // i64 rows of 3 (24 bytes) and f32 rows of 6 in 8-byte units.
  const Tensor idx = random_ids(300, 50, 3, Shape{300});
  for (auto [dt, R] : {std::pair<DType, int64_t>{DType::u8, 7}, {DType::i64, 3}, {DType::f32, 6}}) {
    INFO(dtype_name(dt) << " rows of " << R);
    const Tensor x = test::random_ints(Shape{50, R}, dt, 1);
    Tensor out[2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev ? Device::cuda(0) : Device::cpu();
      out[dev] = Tensor::empty(Shape{300, R}, dt, d);
      index_select_forward(x.to(d), idx.to(d), out[dev]);
    }
    CHECK(out[1].to_vector<double>() == out[0].to_vector<double>());
  }
}

TEST_CASE("gather_scatter: out-of-range indices on the GPU are reported", "[gpu][gather_scatter]") {
  const Device gpu = Device::cuda(0);
  check_index_errors(gpu);  // nothing pending from earlier tests
  Tensor x = test::random_tensor(Shape{4, 8}, 1, -1, 1, DType::f32, gpu);
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{1, 9, 2}, Shape{3}, gpu);
  Tensor out = Tensor::empty(Shape{3, 8}, DType::f32, gpu);
  index_select_forward(x, idx, out);
  CHECK_THROWS_WITH(check_index_errors(gpu),
                    Catch::Contains("index_select") && Catch::Contains("index 9") && Catch::Contains("[0, 4)"));
  const auto o = out.to_vector<float>();
  for (int c = 8; c < 16; ++c) CHECK(o[static_cast<size_t>(c)] == 0.f);  // zero-filled row
  CHECK_NOTHROW(check_index_errors(gpu));                                // reported once
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{-2}, Shape{1, 1}, gpu);
  Tensor g1 = Tensor::empty(Shape{1, 1}, DType::f32, gpu);
  gather_last_forward(x.rows(0, 1).view(Shape{1, 8}), bad, g1);
  CHECK_THROWS_WITH(check_index_errors(gpu), Catch::Contains("gather_last") && Catch::Contains("index -2"));
}
