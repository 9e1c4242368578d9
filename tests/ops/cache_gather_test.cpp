// cache_gather (ops/cache_gather.h) by hand on the CPU: each (i, j) copies column j of row rows[i, j], columns
// from t on stay as they were, any dtype; errors name the op, the shapes and a row out of range.
#include "ops/cache_gather.h"

#include <catch2/catch.hpp>

using namespace moe;

TEST_CASE("cache_gather copies the named row of every column", "[ops][cache_gather]") {
  // store [3, 4, 2]: value 100 r + 10 c + x
  std::vector<float> s;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      for (int x = 0; x < 2; ++x) s.push_back(static_cast<float>(100 * r + 10 * c + x));
  const Tensor store = Tensor::from_vector(s, Shape{3, 4, 2});
  const Tensor rows = Tensor::from_vector(std::vector<int32_t>{2, 0, 1, 1, 1, 0}, Shape{2, 3});
  Tensor out = Tensor::from_vector(std::vector<float>(20, -1.f), Shape{2, 5, 2});
  cache_gather(store, rows, out);
  CHECK(out.to_vector<float>() == std::vector<float>{200, 201, 10,  11,  120, 121, -1, -1, -1, -1,  //
                                                     100, 101, 110, 111, 20,  21,  -1, -1, -1, -1});
  const Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, Shape{2, 2});
  Tensor got = Tensor::zeros(Shape{1, 2}, DType::i32, Device::cpu());
  cache_gather(ints, Tensor::from_vector(std::vector<int32_t>{1, 0}, Shape{1, 2}), got);
  CHECK(got.to_vector<int32_t>() == std::vector<int32_t>{3, 2});
}

TEST_CASE("cache_gather argument errors", "[ops][cache_gather]") {
  const Tensor store = Tensor::zeros(Shape{3, 4, 2}, DType::f32, Device::cpu());
  Tensor out = Tensor::empty(Shape{2, 4, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(cache_gather(store, Tensor::from_vector(std::vector<int32_t>{0, 3}, Shape{2, 1}), out),
                    Catch::Contains("cache_gather") && Catch::Contains("row 3") && Catch::Contains("[0, 3)"));
  CHECK_THROWS_WITH(cache_gather(store, Tensor::zeros(Shape{2, 5}, DType::i32, Device::cpu()), out),
                    Catch::Contains("cache_gather") && Catch::Contains("[2,5]"));
  Tensor wide = Tensor::empty(Shape{2, 4, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(cache_gather(store, Tensor::zeros(Shape{2, 1}, DType::i32, Device::cpu()), wide),
                    Catch::Contains("every axis but the first two"));
}
