// The decoding cache of lib/layers/kv_cache.h against the copy it replaces: over 45 beam-search-like steps
// (hypotheses duplicated, dropped, their count shrinking and growing, a first step of three positions), the
// keys and values its row table names equal those a gather-then-append of every step holds (ops/gather_append.h),
// through the storage's growth past its first 16 columns and past its first rows and its compaction when most
// rows are no longer named; a cross-attention cache's
// lazy reorder through its own row table, the keys untouched; and the error for keys and values of different shapes.
#include "layers/kv_cache.h"

#include <catch2/catch.hpp>

#include "ops/gather_append.h"

using namespace moe;

namespace {
/// [N, t, Hk, dh] as the cache's table names them: row i, column j is storage row key_rows[i, j].
std::vector<float> named(const Tensor& store, const Tensor& key_rows) {
  const Shape& s = store.shape();
  const int64_t n = key_rows.shape()[0], t = key_rows.shape()[1], width = s[2] * s[3];
  const std::vector<float> src = store.to_vector<float>();
  const std::vector<int32_t> rows = key_rows.to_vector<int32_t>();
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const float* p = src.data() + (rows[static_cast<size_t>(i * t + j)] * s[1] + j) * width;
      out.insert(out.end(), p, p + width);
    }
  return out;
}

/// Distinct values for step `step`'s keys (or values, `which`) [n, s, 2, 3].
Tensor fresh(int64_t n, int64_t s, int step, int which) {
  std::vector<float> x(static_cast<size_t>(n * s * 6));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(step * 10000 + which * 5000 + static_cast<int>(i));
  return Tensor::from_vector(x, Shape{n, s, 2, 3});
}
}  // namespace

TEST_CASE("kv cache: the row table names what a gather-then-append holds", "[layers][kv_cache]") {
  KVCache cache;
  Tensor want_k, want_v;  // the copies of every step, as gather_append builds them
  int64_t n = 4;
  for (int step = 0; step < 45; ++step) {
    Tensor order;
    if (step > 0) {
      // Shrink to 3 hypotheses at step 10 (4 rows kept until the columns run out at step 14, whose compaction
      // leaves 3), grow to 7 at step 20 (compacted into 7 rows), shrink to 3 at step 35 (compacted: 4 of 7 rows
      // unnamed); otherwise keep n, duplicating and dropping some.
      const int64_t next = step == 10 ? 3 : step == 20 ? 7 : step == 35 ? 3 : n;
      std::vector<int32_t> o(static_cast<size_t>(next));
      for (int64_t i = 0; i < next; ++i)
        o[static_cast<size_t>(i)] = static_cast<int32_t>((i * 3 + step) % n / 2 * 2 % n);
      order = Tensor::from_vector(o, Shape{next});
      reorder_cache(cache, order);
      n = next;
    }
    const int64_t s = step == 0 ? 3 : 1;
    const Tensor k = fresh(n, s, step, 0), v = fresh(n, s, step, 1);
    append_to_cache(cache, k, v);
    want_k = step == 0 ? k : gather_append(want_k, order, k);
    want_v = step == 0 ? v : gather_append(want_v, order, v);
    INFO("step " << step);
    REQUIRE(cache.key_rows.shape() == Shape({n, want_k.shape()[1]}));
    CHECK(named(cache.k, cache.key_rows) == want_k.to_vector<float>());
    CHECK(named(cache.v, cache.key_rows) == want_v.to_vector<float>());
    CHECK(!cache.order.defined());
    CHECK(cache.k.shape()[0] == (step < 14 ? 4 : step < 20 ? 3 : step < 35 ? 7 : 3));
    CHECK(cache.k.shape()[1] == (step < 14 ? 16 : step < 30 ? 32 : 64));  // 16, doubled at positions 17 and 33
  }
}

TEST_CASE("kv cache: errors and a cross-attention cache's pending reorder", "[layers][kv_cache]") {
  KVCache cache;
  CHECK_THROWS_WITH(append_to_cache(cache, fresh(2, 1, 0, 0), fresh(3, 1, 0, 1)),
                    Catch::Contains("decoding cache") && Catch::Contains("[2,1,2,3]") && Catch::Contains("[3,1,2,3]"));
  // Cross-attention: the keys stay one row per sentence; a reorder (beams made, then a sentence leaving) rewrites
  // only the table, through which the hypotheses read what a copy of their sentences' rows would hold.
  KVCache cross;
  cross.k = fresh(2, 4, 0, 0);
  const Tensor keys = cross.k;
  apply_cross_order(cross);  // no reorder yet: hypothesis i is sentence i
  CHECK(!cross.key_rows.defined());
  reorder_cache(cross, Tensor::from_vector(std::vector<int32_t>{1, 1, 0}, Shape{3}));
  CHECK(cross.order.to_vector<int32_t>() == std::vector<int32_t>{1, 1, 0});
  apply_cross_order(cross);
  CHECK(!cross.order.defined());
  CHECK(cross.k.raw() == keys.raw());
  CHECK(cross.key_rows.to_vector<int32_t>() == std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(named(cross.k, cross.key_rows) ==
        select_rows(keys, Tensor::from_vector(std::vector<int32_t>{1, 1, 0}, Shape{3})).to_vector<float>());
  reorder_cache(cross, Tensor::from_vector(std::vector<int32_t>{2, 0}, Shape{2}));  // sentence 1 finished
  apply_cross_order(cross);
  CHECK(cross.k.raw() == keys.raw());
  CHECK(cross.key_rows.to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1});
}
