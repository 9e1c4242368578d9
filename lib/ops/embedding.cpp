// CPU reference of the embedding lookup and its backward (see embedding.h), f32/f64 in any
// combination of table and output dtypes, and the checked entry points.
// Covered by tests/ops/embedding_test.cpp.
#include "ops/embedding.h"

#include "ops/dispatch.h"

namespace moe {

namespace cpu {
namespace {
void check_ids(const Tensor& ids, int64_t V) {
  const int32_t* id = ids.data<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    MOE_CHECK(id[i] >= 0 && id[i] < V, "embedding: id ", id[i], " at position ", i, " is out of range for a table of ",
              V, " rows (V = ", V, ")");
}
template <class TT, class TO>
void fwd(const TT* table, const int32_t* id, TO* out, int64_t n, int64_t D, float scale) {
  for (int64_t s = 0; s < n; ++s)
    for (int64_t c = 0; c < D; ++c) out[s * D + c] = static_cast<TO>(static_cast<TO>(scale) * table[id[s] * D + c]);
}
template <class TT, class TO>
void bwd(const int32_t* id, const TO* dout, TT* dtable, int64_t n, int64_t D, float scale) {
  for (int64_t s = 0; s < n; ++s)
    for (int64_t c = 0; c < D; ++c) dtable[id[s] * D + c] += static_cast<TT>(scale) * static_cast<TT>(dout[s * D + c]);
}
}  // namespace

void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale) {
  check_cpu_float("embedding", table);
  check_cpu_float("embedding (output)", out);
  check_ids(ids, table.shape()[0]);
  const int64_t n = ids.numel(), D = table.shape()[1];
  const int32_t* id = ids.data<int32_t>();
  const bool t64 = table.dtype() == DType::f64, o64 = out.dtype() == DType::f64;
  if (t64 && o64)
    fwd(table.data<double>(), id, out.data<double>(), n, D, scale);
  else if (t64)
    fwd(table.data<double>(), id, out.data<float>(), n, D, scale);
  else if (o64)
    fwd(table.data<float>(), id, out.data<double>(), n, D, scale);
  else
    fwd(table.data<float>(), id, out.data<float>(), n, D, scale);
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale) {
  check_cpu_float("embedding backward", dtable);
  check_cpu_float("embedding backward (output gradient)", dout);
  check_ids(ids, dtable.shape()[0]);
  const int64_t n = ids.numel(), D = dtable.shape()[1];
  const int32_t* id = ids.data<int32_t>();
  const bool t64 = dtable.dtype() == DType::f64, o64 = dout.dtype() == DType::f64;
  if (t64 && o64)
    bwd(id, dout.data<double>(), dtable.data<double>(), n, D, scale);
  else if (t64)
    bwd(id, dout.data<float>(), dtable.data<double>(), n, D, scale);
  else if (o64)
    bwd(id, dout.data<double>(), dtable.data<float>(), n, D, scale);
  else
    bwd(id, dout.data<float>(), dtable.data<float>(), n, D, scale);
}
}  // namespace cpu

Shape embedding_shape(const Shape& table, const Shape& ids) {
  MOE_CHECK(table.ndim() == 2, "embedding: the table must be [V, D], not ", table);
  MOE_CHECK(ids.ndim() < Shape::kMaxDims, "embedding: ids ", ids, " have too many axes to add one");
  std::vector<int64_t> d = ids.vec();
  d.push_back(table[1]);
  return Shape(d);
}

void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale) {
  MOE_CHECK(ids.dtype() == DType::i32, "embedding: ids must be i32, not ", dtype_name(ids.dtype()), " (shape ",
            ids.shape(), ")");
  check_same_device("embedding", table, ids, out);
  check_shape("embedding", "output", out, embedding_shape(table.shape(), ids.shape()));
  MOE_CHECK(is_floating(out.dtype()), "embedding: output dtype ", dtype_name(out.dtype()), " is not floating");
  if (out.numel() == 0) return;
  MOE_CHECK(table.shape()[0] > 0, "embedding: ", ids.numel(), " ids into an empty table ", table.shape());
  MOE_DISPATCH(table, embedding_forward, table, ids, out, scale);
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale) {
  MOE_CHECK(ids.dtype() == DType::i32, "embedding backward: ids must be i32, not ", dtype_name(ids.dtype()));
  check_same_device("embedding backward", dtable, ids, dout);
  check_shape("embedding backward", "output gradient", dout, embedding_shape(dtable.shape(), ids.shape()));
  if (dout.numel() == 0) return;
  MOE_CHECK(dtable.shape()[0] > 0, "embedding backward: ", ids.numel(), " ids into an empty table ", dtable.shape());
  MOE_DISPATCH(dtable, embedding_backward, ids, dout, dtable, scale);
}

}  // namespace moe
