// Stable counting sort by key: hand-computed permutation and offsets (empty segments), random keys
// against std::stable_sort (edge sizes, up to 4096 segments), out-of-range flags,
// inverse_permutation, the expression wrapper and error messages.
#include "graph/expr/sort.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

using namespace moe;

namespace {
std::pair<std::vector<int32_t>, std::vector<int32_t>> run_sort(const std::vector<int32_t>& keys, int segments) {
  Tensor k = Tensor::from_vector(keys, Shape{static_cast<int64_t>(keys.size())});
  Tensor perm = Tensor::empty(k.shape(), DType::i32, Device::cpu());
  Tensor offsets = Tensor::empty(Shape{segments + 1}, DType::i32, Device::cpu());
  sort_by_key(k, segments, perm, offsets);
  return {perm.to_vector<int32_t>(), offsets.to_vector<int32_t>()};
}
}  // namespace

TEST_CASE("sort_by_key: hand-computed permutation and offsets", "[ops][sort]") {
  auto [perm, offsets] = run_sort({2, 0, 2, 1, 0, 2}, 5);
  CHECK(perm == std::vector<int32_t>{1, 4, 3, 0, 2, 5});
  CHECK(offsets == std::vector<int32_t>{0, 2, 3, 6, 6, 6});  // segments 3 and 4 empty
  std::tie(perm, offsets) = run_sort({}, 3);
  CHECK(perm.empty());
  CHECK(offsets == std::vector<int32_t>{0, 0, 0, 0});
  std::tie(perm, offsets) = run_sort({0}, 1);
  CHECK(perm == std::vector<int32_t>{0});
  CHECK(offsets == std::vector<int32_t>{0, 1});
}

TEST_CASE("sort_by_key: out-of-range keys are flagged and placed last", "[ops][sort]") {
  auto [perm, offsets] = run_sort({-1, 1, 5, 0, 2}, 2);
  CHECK(perm == std::vector<int32_t>{3, 1, 0, 2, 4});
  CHECK(offsets == std::vector<int32_t>{0, 1, 2});  // offsets[S] = 2 < N = 5: three keys out of range
}

TEST_CASE("sort_by_key: random keys against a stable sort", "[ops][sort]") {
  std::mt19937 rng(9);
  for (auto [n, segments] : {std::pair{1, 1}, {33, 7}, {1000, 64}, {5000, 4096}, {100000, 8}}) {
    INFO(n << " keys, " << segments << " segments");
    std::uniform_int_distribution<int> u(0, segments - 1);
    std::vector<int32_t> keys(static_cast<size_t>(n));
    for (int32_t& k : keys) k = u(rng);
    auto [perm, offsets] = run_sort(keys, segments);
    std::vector<int32_t> ref(keys.size());
    std::iota(ref.begin(), ref.end(), 0);
    std::stable_sort(ref.begin(), ref.end(), [&](int32_t a, int32_t b) { return keys[size_t(a)] < keys[size_t(b)]; });
    CHECK(perm == ref);
    for (int s = 0; s <= segments; ++s)
      CHECK(offsets[size_t(s)] == std::count_if(keys.begin(), keys.end(), [s](int32_t k) { return k < s; }));
  }
}

TEST_CASE("inverse_permutation and the expression wrapper", "[ops][sort]") {
  Tensor perm = Tensor::from_vector(std::vector<int32_t>{2, 0, 3, 1}, Shape{4});
  Tensor inv = Tensor::empty(Shape{4}, DType::i32, Device::cpu());
  inverse_permutation(perm, inv);
  CHECK(inv.to_vector<int32_t>() == std::vector<int32_t>{1, 3, 0, 2});

  for (bool training : {false, true}) {
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = training});
    SortedSegments s = sort_by_key(g.input(Tensor::from_vector(std::vector<int32_t>{1, 1, 0, 2, 0}, Shape{5})), 4);
    Expr back = inverse_permutation(s.perm);
    g.forward();
    CHECK(s.perm.val().to_vector<int32_t>() == std::vector<int32_t>{2, 4, 0, 1, 3});
    CHECK(s.offsets.val().to_vector<int32_t>() == std::vector<int32_t>{0, 2, 4, 5, 5});
    CHECK(back.val().to_vector<int32_t>() == std::vector<int32_t>{2, 3, 0, 4, 1});
    CHECK_FALSE(s.perm->requires_grad);
  }
}

TEST_CASE("sort_by_key: errors name the op and shapes", "[ops][sort][errors]") {
  Tensor keys = Tensor::zeros(Shape{4}, DType::f32, Device::cpu());
  Tensor perm = Tensor::empty(Shape{4}, DType::i32, Device::cpu());
  Tensor offsets = Tensor::empty(Shape{3}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(sort_by_key(keys, 2, perm, offsets), Catch::Contains("sort_by_key") && Catch::Contains("f32"));
  Tensor ikeys = Tensor::zeros(Shape{4}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(sort_by_key(ikeys, 3, perm, offsets),
                    Catch::Contains("sort_by_key") && Catch::Contains("[3]") && Catch::Contains("[4]"));
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, 5}, Shape{2});
  Tensor inv = Tensor::empty(Shape{2}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(inverse_permutation(bad, inv), Catch::Contains("inverse_permutation") && Catch::Contains("5"));
}
