// kv_cache.h implementation: a step writes the new columns (strided_copy) and reorders the row table while
// appending their row numbers (one gather_append of i32 rows); a compaction copies the named keys into new
// storage (cache_gather), after which row i names itself at every column. A cross-attention reorder gathers
// rows of its table only (index_select). Covered by
// tests/layers/kv_cache_test.cpp.
#include "layers/kv_cache.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "layers/recent_tensors.h"
#include "ops/cache_gather.h"
#include "ops/gather_append.h"
#include "ops/gather_scatter.h"
#include "ops/shape_ops.h"

namespace moe {
namespace {
constexpr int64_t kFirstColumns = 16;  // a new cache's columns (then 32, 64, ...)

/// i32 [n, s] holding i in row i: the rows this step's keys are written to.
Tensor row_numbers(int64_t n, int64_t s, Device device) {
  thread_local RecentTensors<std::tuple<int64_t, int64_t, Device>> recent;
  return recent.get(std::make_tuple(n, s, device), [&] {
    std::vector<int32_t> ids(static_cast<size_t>(n * s));
    for (int64_t i = 0; i < n * s; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i / s);
    return Tensor::from_vector(ids, Shape{n, s}, device);
  });
}

/// Storage [n, columns, ...] of fresh's kind holding, in its first t columns, the keys `table` ([n, t] or
/// undefined when t = 0) names in `store`: row i then holds hypothesis i's keys.
Tensor compacted(const Tensor& store, const Tensor& table, const Tensor& fresh, int64_t columns) {
  const Shape& f = fresh.shape();
  Tensor out = Tensor::empty(Shape{f[0], columns, f[2], f[3]}, fresh.dtype(), fresh.device());
  if (table.defined()) cache_gather(store, table, out);
  return out;
}

/// Writes fresh [n, s, Hk, dh] into columns [t, t + s) of rows [0, n) of the storage.
void write_columns(Tensor& store, const Tensor& fresh, int64_t t) {
  const Shape& f = fresh.shape();
  const int64_t width = f[2] * f[3];
  strided_copy(fresh, store, f[0], f[1] * width, f[1] * width, store.shape()[1] * width, 0, t * width);
}
}  // namespace

Tensor select_rows(const Tensor& t, const Tensor& origin) {
  if (!t.defined()) return t;
  Shape s = t.shape();
  s[0] = origin.numel();
  Tensor out = Tensor::empty(s, t.dtype(), t.device());
  index_select_forward(t, origin.device() == t.device() ? origin : origin.to(t.device()), out);
  return out;
}

void reorder_cache_rows(KVCache& cache, const Tensor& origin) {
  for (auto& [name, t] : cache.rows) t = select_rows(t, origin);
}

void reorder_cache(KVCache& cache, const Tensor& origin) {
  if (cache.k.defined()) {
    const Tensor here = origin.device() == cache.k.device() ? origin : origin.to(cache.k.device());
    cache.order = cache.order.defined() ? select_rows(cache.order, here) : here;
  }
  reorder_cache_rows(cache, origin);
}

void apply_cross_order(KVCache& cache) {
  if (!cache.order.defined()) return;
  const Tensor table =
      cache.key_rows.defined() ? cache.key_rows : row_numbers(cache.k.shape()[0], cache.k.shape()[1], cache.k.device());
  cache.key_rows = select_rows(table, cache.order);
  cache.order = Tensor();
}

void append_to_cache(KVCache& cache, const Tensor& k, const Tensor& v) {
  const Shape& f = k.shape();
  MOE_CHECK(f.ndim() == 4 && v.shape() == f, "decoding cache: keys ", f, " and values ", v.shape(),
            " must both be [N, s, heads, head size]");
  const int64_t n = f[0], s = f[1], t = cache.key_rows.defined() ? cache.key_rows.shape()[1] : 0;
  const int64_t rows = cache.k.defined() ? cache.k.shape()[0] : 0, columns = cache.k.defined() ? cache.k.shape()[1] : 0;
  // Compact (row i holding hypothesis i's keys) when the columns run out, when there are more hypotheses than
  // rows, and when half the rows are no longer named: memory stays within 2x the live keys in each direction.
  const bool compact = t + s > columns || n > rows || 2 * n <= rows;
  if (compact) {
    const Tensor table = cache.order.defined() ? select_rows(cache.key_rows, cache.order) : cache.key_rows;
    const int64_t room = t + s > columns ? std::max({t + s, 2 * columns, kFirstColumns}) : columns;
    cache.k = compacted(cache.k, table, k, room);
    cache.v = compacted(cache.v, table, v, room);
  }
  write_columns(cache.k, k, t);
  write_columns(cache.v, v, t);
  cache.key_rows = compact ? row_numbers(n, t + s, k.device())
                           : gather_append(cache.key_rows, cache.order, row_numbers(n, s, k.device()));
  cache.order = Tensor();
}

}  // namespace moe
