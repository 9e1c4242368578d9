// CPU reference of strided_copy and transpose (see shape_ops.h), the permutation helpers shared
// with CUDA, and the checked public entry points. Copies move bytes (any dtype); accumulation
// runs in f32 or f64. Covered by tests/ops/shape_ops_test.cpp.
#include "ops/shape_ops.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "ops/dispatch.h"

namespace moe {

std::vector<int> normalize_perm(const char* op, const Shape& shape, const std::vector<int>& perm) {
  const int n = shape.ndim();
  MOE_CHECK(static_cast<int>(perm.size()) == n, op, ": permutation of ", perm.size(), " axes for shape ", shape);
  std::vector<int> out(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t k = 0; k < perm.size(); ++k) {
    const int a = perm[k] < 0 ? perm[k] + n : perm[k];
    MOE_CHECK(a >= 0 && a < n && !seen[static_cast<size_t>(a)], op, ": entry ", perm[k],
              " is not a valid permutation axis for shape ", shape);
    seen[static_cast<size_t>(a)] = true;
    out[k] = a;
  }
  return out;
}

Shape transpose_shape(const Shape& shape, const std::vector<int>& perm) {
  std::vector<int64_t> d(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) d[k] = shape[perm[k]];
  return Shape(d);
}

std::vector<int> inverse_perm(const std::vector<int>& perm) {
  std::vector<int> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[static_cast<size_t>(perm[k])] = static_cast<int>(k);
  return inv;
}

void collapse_perm(const Shape& shape, const std::vector<int>& perm, std::vector<int64_t>& dims,
                   std::vector<int>& out_perm) {
  // 1. Drop size-1 axes, renumbering the remaining input axes.
  std::vector<int> renum(perm.size(), -1);
  int kept = 0;
  for (int a = 0; a < shape.ndim(); ++a)
    if (shape[a] != 1) renum[static_cast<size_t>(a)] = kept++;
  std::vector<int> p;
  std::vector<int64_t> d;
  for (int a = 0; a < shape.ndim(); ++a)
    if (shape[a] != 1) d.push_back(shape[a]);
  for (int a : perm)
    if (renum[static_cast<size_t>(a)] >= 0) p.push_back(renum[static_cast<size_t>(a)]);
  dims.clear();
  out_perm.clear();
  if (p.empty()) {
    dims.push_back(1);
    out_perm.push_back(0);
    return;
  }
  // 2. Groups of input axes that stay consecutive in the output (in output order).
  std::vector<std::pair<int, int>> groups;  // [first, last] input axis
  for (int a : p) {
    if (!groups.empty() && groups.back().second + 1 == a)
      groups.back().second = a;
    else
      groups.push_back({a, a});
  }
  std::vector<size_t> order(groups.size());  // group indices sorted by input position
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return groups[x].first < groups[y].first; });
  std::vector<int> rank(groups.size());
  for (size_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = static_cast<int>(r);
    int64_t size = 1;
    for (int a = groups[order[r]].first; a <= groups[order[r]].second; ++a) size *= d[static_cast<size_t>(a)];
    dims.push_back(size);
  }
  for (size_t g = 0; g < groups.size(); ++g) out_perm.push_back(rank[g]);
}

namespace cpu {
namespace {
template <class T>
void add_rows(const T* s, T* d, int64_t rows, int64_t len, int64_t ss, int64_t ds) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < len; ++c) d[r * ds + c] += s[r * ss + c];
}

template <class T, bool Acc>
void transpose_impl(const T* x, T* y, const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  constexpr int kMax = Shape::kMaxDims;
  const int n = static_cast<int>(dims.size());
  std::array<int64_t, kMax> in_stride{}, out_dims{}, stride{}, idx{};
  int64_t total = 1;
  for (int a = n - 1; a >= 0; --a) {
    in_stride[a] = total;
    total *= dims[static_cast<size_t>(a)];
  }
  for (int k = 0; k < n; ++k) {
    out_dims[k] = dims[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    stride[k] = in_stride[perm[static_cast<size_t>(k)]];
  }
  int64_t src = 0;
  for (int64_t o = 0; o < total; ++o) {
    if constexpr (Acc)
      y[o] += x[src];
    else
      y[o] = x[src];
    for (int k = n - 1; k >= 0; --k) {  // odometer over the output index
      src += stride[k];
      if (++idx[k] < out_dims[k]) break;
      src -= stride[k] * out_dims[k];
      idx[k] = 0;
    }
  }
}

template <bool Acc>
void transpose_sized(const Tensor& x, Tensor& y, const std::vector<int64_t>& d, const std::vector<int>& p) {
  switch (dtype_size(x.dtype())) {
    case 1:
      transpose_impl<uint8_t, Acc>(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y.raw()), d, p);
      break;
    case 2:
      transpose_impl<uint16_t, Acc>(static_cast<const uint16_t*>(x.raw()), static_cast<uint16_t*>(y.raw()), d, p);
      break;
    case 4:
      transpose_impl<uint32_t, Acc>(static_cast<const uint32_t*>(x.raw()), static_cast<uint32_t*>(y.raw()), d, p);
      break;
    default:
      transpose_impl<uint64_t, Acc>(static_cast<const uint64_t*>(x.raw()), static_cast<uint64_t*>(y.raw()), d, p);
  }
}
}  // namespace

void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset, int64_t dst_offset, bool accumulate) {
  if (accumulate) {
    check_cpu_float("strided_copy (accumulate)", src);
    if (src.dtype() == DType::f64)
      add_rows(src.data<double>() + src_offset, dst.data<double>() + dst_offset, rows, len, src_stride, dst_stride);
    else
      add_rows(src.data<float>() + src_offset, dst.data<float>() + dst_offset, rows, len, src_stride, dst_stride);
    return;
  }
  const size_t es = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw()) + src_offset * static_cast<int64_t>(es);
  char* d = static_cast<char*>(dst.raw()) + dst_offset * static_cast<int64_t>(es);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(d + r * dst_stride * static_cast<int64_t>(es), s + r * src_stride * static_cast<int64_t>(es),
                static_cast<size_t>(len) * es);
}

void transpose(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate) {
  std::vector<int64_t> d;
  std::vector<int> p;
  collapse_perm(x.shape(), perm, d, p);
  if (!accumulate) return transpose_sized<false>(x, y, d, p);
  check_cpu_float("transpose (accumulate)", x);
  if (x.dtype() == DType::f64)
    transpose_impl<double, true>(x.data<double>(), y.data<double>(), d, p);
  else
    transpose_impl<float, true>(x.data<float>(), y.data<float>(), d, p);
}
}  // namespace cpu

void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset, int64_t dst_offset, bool accumulate) {
  check_same_device("strided_copy", src, dst);
  check_dtype("strided_copy", "destination", dst, src.dtype());
  MOE_CHECK(rows >= 0 && len >= 0 && src_offset >= 0 && dst_offset >= 0, "strided_copy: negative extent (rows ", rows,
            ", len ", len, ", offsets ", src_offset, ", ", dst_offset, ")");
  if (rows == 0 || len == 0) return;
  auto last = [&](int64_t off, int64_t stride) { return off + (rows - 1) * stride + len; };
  MOE_CHECK(last(src_offset, src_stride) <= src.numel() && last(dst_offset, dst_stride) <= dst.numel(),
            "strided_copy: ", rows, " rows of ", len, " (strides ", src_stride, ", ", dst_stride, ", offsets ",
            src_offset, ", ", dst_offset, ") run past source ", src.shape(), " or destination ", dst.shape());
  MOE_DISPATCH(src, strided_copy, src, dst, rows, len, src_stride, dst_stride, src_offset, dst_offset, accumulate);
}

void transpose_forward(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate) {
  const std::vector<int> p = normalize_perm("transpose", x.shape(), perm);
  check_same_device("transpose", x, y);
  check_shape("transpose", "output", y, transpose_shape(x.shape(), p));
  check_dtype("transpose", "output", y, x.dtype());
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, transpose, x, y, p, accumulate);
}

}  // namespace moe
