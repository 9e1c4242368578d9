// Batch packing: hand-checked tensors for a translation batch (x </s>; <s> y; y </s>; masks; real targets) and an
// LM batch. Tests lib/data/batch.cpp.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/batch.h"

using namespace moe;
using namespace moe::data;

TEST_CASE("batch: translation batch layout", "[data]") {
  std::vector<int32_t> a{10, 11, 12}, b{20}, c{30, 31}, d{40, 41, 42, 43};
  std::vector<std::span<const int32_t>> src{a, b}, tgt{c, d};
  Batch x = make_batch(src, tgt, {7, 3}, 0, 2, 3);
  CHECK(x.src.shape() == Shape{2, 4});
  CHECK(x.src.to_vector<int32_t>() == std::vector<int32_t>{10, 11, 12, 3, 20, 3, 0, 0});
  CHECK(x.src_mask.to_vector<float>() == std::vector<float>{1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(x.tgt_in.shape() == Shape{2, 5});
  CHECK(x.tgt_in.to_vector<int32_t>() == std::vector<int32_t>{2, 30, 31, 0, 0, 2, 40, 41, 42, 43});
  CHECK(x.tgt_out.to_vector<int32_t>() == std::vector<int32_t>{30, 31, 3, 0, 0, 40, 41, 42, 43, 3});
  CHECK(x.tgt_mask.to_vector<float>() == std::vector<float>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  CHECK(x.src_lengths == std::vector<int32_t>{4, 2});
  CHECK(x.tgt_lengths == std::vector<int32_t>{3, 5});
  CHECK(x.src_tokens == 6);
  CHECK(x.tgt_tokens == 8);
  CHECK(x.ids == std::vector<int64_t>{7, 3});
  CHECK(x.src.dtype() == DType::i32);
  // the real targets: flat positions in tgt_out and their ids (the loss skips the rest)
  CHECK(x.tgt_rows.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 5, 6, 7, 8, 9});
  CHECK(x.tgt_labels.to_vector<int32_t>() == std::vector<int32_t>{30, 31, 3, 40, 41, 42, 43, 3});
  CHECK(x.tgt_rows.dtype() == DType::i32);
  CHECK(x.src_rows.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4, 5});  // the real source positions
  // size-1 batch with an empty target side
  std::vector<int32_t> e;
  Batch y = make_batch({std::span<const int32_t>(a)}, {std::span<const int32_t>(e)}, {0}, 0, 2, 3);
  CHECK(y.tgt_in.to_vector<int32_t>() == std::vector<int32_t>{2});
  CHECK(y.tgt_out.to_vector<int32_t>() == std::vector<int32_t>{3});
  CHECK_THROWS_WITH(make_batch(src, {tgt[0]}, {1, 2}, 0, 2, 3), Catch::Matchers::Contains("make_batch"));
}

TEST_CASE("batch: LM batch pads rows", "[data]") {
  LmBatch b = make_lm_batch({{5, 6, 7}, {8}}, {{6, 7, 9}, {4}}, {{1, 1, 0}, {1}}, {0, 1}, 0);
  CHECK(b.input.shape() == Shape{2, 3});
  CHECK(b.input.to_vector<int32_t>() == std::vector<int32_t>{5, 6, 7, 8, 0, 0});
  CHECK(b.target.to_vector<int32_t>() == std::vector<int32_t>{6, 7, 9, 4, 0, 0});
  CHECK(b.mask.to_vector<float>() == std::vector<float>{1, 1, 0, 1, 0, 0});
  CHECK(b.tokens == 3);
  CHECK_THROWS_WITH(make_lm_batch({{1, 2}}, {{1}}, {{1, 1}}, {0}, 0), Catch::Matchers::Contains("row 0"));
}
