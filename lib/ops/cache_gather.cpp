// cache_gather.h: argument checks, dispatch and the CPU copy (one run of a column's bytes per (i, j)).
// Covered by tests/ops/cache_gather_test.cpp.
#include "ops/cache_gather.h"

#include <cstring>

#include "common/cpu_threads.h"
#include "ops/dispatch.h"

namespace moe {

namespace cpu {
void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out) {
  const int64_t n = rows.shape()[0], t = rows.shape()[1], r = store.shape()[0];
  const size_t width =
      static_cast<size_t>(store.numel() / (store.shape()[0] * store.shape()[1])) * dtype_size(store.dtype());
  const size_t src_row = width * static_cast<size_t>(store.shape()[1]),
               dst_row = width * static_cast<size_t>(out.shape()[1]);
  const int32_t* pr = rows.data<int32_t>();
  for (int64_t i = 0; i < n * t; ++i)
    MOE_CHECK(pr[i] >= 0 && pr[i] < r, "cache_gather: row ", pr[i], " at position ", i, " is out of range [0, ", r,
              ")");
  const char* src = static_cast<const char*>(store.raw());
  char* dst = static_cast<char*>(out.raw());
  parallel_for(n, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < t; ++j)
        std::memcpy(dst + static_cast<size_t>(i) * dst_row + static_cast<size_t>(j) * width,
                    src + static_cast<size_t>(pr[i * t + j]) * src_row + static_cast<size_t>(j) * width, width);
  });
}
}  // namespace cpu

void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out) {
  const Shape& s = store.shape();
  const Shape& o = out.shape();
  check_dtype("cache_gather", "rows", rows, DType::i32);
  MOE_CHECK(s.ndim() >= 2 && o.ndim() == s.ndim() && rows.shape().ndim() == 2, "cache_gather: store ", s, ", rows ",
            rows.shape(), " and out ", o, " must be [R, C, ...], [N, t] and [N, C', ...]");
  MOE_CHECK(o.with(1, s[1]).with(0, s[0]) == s && o[0] == rows.shape()[0] && rows.shape()[1] <= s[1] &&
                rows.shape()[1] <= o[1],
            "cache_gather: store ", s, ", rows ", rows.shape(), " and out ", o,
            " must agree on every axis but the first two, with t at most either's columns");
  MOE_CHECK(store.dtype() == out.dtype(), "cache_gather: dtypes ", dtype_name(store.dtype()), " and ",
            dtype_name(out.dtype()), " differ");
  check_same_device("cache_gather", store, rows, out);
  if (rows.numel() == 0 || store.numel() == 0) return;
  MOE_DISPATCH(store, cache_gather, store, rows, out);
}

}  // namespace moe
