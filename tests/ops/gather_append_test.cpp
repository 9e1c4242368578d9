// gather_append against index_select followed by concat (hand-written loops), with and without an order,
// duplicated and dropped rows, an empty past, f32 and i32; and its argument errors.
#include "ops/gather_append.h"

#include <catch2/catch.hpp>
#include <numeric>

using namespace moe;

TEST_CASE("gather_append gathers the past rows and appends the fresh ones", "[ops][gather_append]") {
  // past [3, 2, 2] = 0..11, fresh [4, 1, 2] = 100..107, order {2, 0, 0, 1}
  std::vector<float> p(12), f(8);
  std::iota(p.begin(), p.end(), 0.f);
  std::iota(f.begin(), f.end(), 100.f);
  Tensor past = Tensor::from_vector(p, Shape{3, 2, 2});
  Tensor fresh = Tensor::from_vector(f, Shape{4, 1, 2});
  Tensor out = gather_append(past, Tensor::from_vector(std::vector<int32_t>{2, 0, 0, 1}, Shape{4}), fresh);
  CHECK(out.shape() == Shape{4, 3, 2});
  CHECK(out.to_vector<float>() == std::vector<float>{8,  9,  10, 11, 100, 101, 0, 1, 2, 3, 102, 103,  //
                                                     0,  1,  2,  3,  104, 105, 4, 5, 6, 7, 106, 107});
  // no order: row i of past
  Tensor same = gather_append(past, Tensor(), fresh.flat_range(0, 6).view(Shape{3, 1, 2}));
  CHECK(same.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 100, 101, 4, 5, 6, 7, 102, 103, 8, 9, 10, 11, 104, 105});
  // an empty past and an integer dtype
  Tensor none = Tensor::empty(Shape{2, 0, 3}, DType::i32, Device::cpu());
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Shape{2, 2, 3});
  CHECK(gather_append(none, Tensor::from_vector(std::vector<int32_t>{1, 0}, Shape{2}), ints).to_vector<int32_t>() ==
        ints.to_vector<int32_t>());
}

TEST_CASE("gather_append argument errors", "[ops][gather_append]") {
  Tensor past = Tensor::zeros(Shape{3, 2, 2}, DType::f32, Device::cpu());
  Tensor fresh = Tensor::zeros(Shape{2, 1, 2}, DType::f32, Device::cpu());
  auto order = [](std::vector<int32_t> o) {
    const int64_t n = static_cast<int64_t>(o.size());
    return Tensor::from_vector(o, Shape{n});
  };
  CHECK_THROWS_WITH(gather_append(past, order({0, 3}), fresh),
                    Catch::Contains("gather_append") && Catch::Contains("index 3") && Catch::Contains("[0, 3)"));
  CHECK_THROWS_WITH(gather_append(past, order({0}), fresh), Catch::Contains("gather_append") && Catch::Contains("order"));
  CHECK_THROWS_WITH(gather_append(past, Tensor(), fresh), Catch::Contains("3 rows, fresh 2"));
  CHECK_THROWS_WITH(gather_append(past, order({0, 1}), Tensor::zeros(Shape{2, 1, 3}, DType::f32, Device::cpu())),
                    Catch::Contains("every axis but the first two"));
  CHECK_THROWS_WITH(gather_append(past, order({0, 1}), Tensor::zeros(Shape{2, 1, 2}, DType::f64, Device::cpu())),
                    Catch::Contains("dtypes"));
}
