// gather_append.h implementation. Covered by tests/ops/gather_append_test.cpp.
#include "ops/gather_append.h"

#include <cstring>

#include "common/cpu_threads.h"
#include "ops/dispatch.h"
#include "ops/gather_scatter.h"
#include "ops/shape_ops.h"

namespace moe {

namespace cpu {
void gather_append(const Tensor& past, const Tensor& order, const Tensor& fresh, Tensor& out) {
  const int64_t n = out.shape()[0], m = past.shape()[0];
  const size_t esize = dtype_size(out.dtype());
  const size_t past_row = static_cast<size_t>(past.numel() / std::max<int64_t>(1, m)) * esize;
  const size_t fresh_row = static_cast<size_t>(fresh.numel() / std::max<int64_t>(1, n)) * esize;
  const int32_t* po = order.defined() ? order.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i)
    MOE_CHECK(!po || (po[i] >= 0 && po[i] < m), "gather_append: index ", po[i], " at position ", i,
              " is out of range [0, ", m, ")");
  const char* src = static_cast<const char*>(past.raw());
  const char* add = static_cast<const char*>(fresh.raw());
  char* dst = static_cast<char*>(out.raw());
  parallel_for(n, std::max<int64_t>(1, kElementsPerThread * 4 / static_cast<int64_t>(past_row + fresh_row + 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t i = r0; i < r1; ++i) {
                   char* row = dst + static_cast<size_t>(i) * (past_row + fresh_row);
                   if (past_row) std::memcpy(row, src + static_cast<size_t>(po ? po[i] : i) * past_row, past_row);
                   std::memcpy(row + past_row, add + static_cast<size_t>(i) * fresh_row, fresh_row);
                 }
               });
}
}  // namespace cpu

Tensor gather_append(const Tensor& past, const Tensor& order, const Tensor& fresh) {
  const Shape& p = past.shape();
  const Shape& f = fresh.shape();
  MOE_CHECK(p.ndim() >= 2 && f.ndim() == p.ndim() && f.with(1, p[1]).with(0, p[0]) == p, "gather_append: past ", p,
            " and fresh ", f, " must agree on every axis but the first two");
  MOE_CHECK(past.dtype() == fresh.dtype(), "gather_append: dtypes ", dtype_name(past.dtype()), " and ",
            dtype_name(fresh.dtype()), " differ");
  const int64_t n = f[0];
  if (order.defined()) {
    check_dtype("gather_append", "order", order, DType::i32);
    check_shape("gather_append", "order", order, Shape{n});
  } else {
    MOE_CHECK(p[0] == n, "gather_append: past has ", p[0], " rows, fresh ", n, " (and no order)");
  }
  check_same_device("gather_append", past, order, fresh);
  Tensor out = Tensor::empty(f.with(1, p[1] + f[1]), past.dtype(), past.device());
  if (out.numel() == 0) return out;
  if (past.device().is_cpu()) {
    cpu::gather_append(past, order, fresh, out);
    return out;
  }
  Tensor kept = past;
  if (order.defined()) {
    kept = Tensor::empty(p.with(0, n), past.dtype(), past.device());
    index_select_forward(past, order, kept);
  }
  const int64_t past_len = kept.numel() / std::max<int64_t>(1, n), fresh_len = fresh.numel() / std::max<int64_t>(1, n);
  strided_copy(kept, out, n, past_len, past_len, past_len + fresh_len);
  strided_copy(fresh, out, n, fresh_len, fresh_len, past_len + fresh_len, 0, past_len);
  return out;
}

}  // namespace moe
