// Shared pieces of the broadcasting binary ops (CPU reference in binary.cpp, CUDA in binary.cu):
// the scalar formulas and partial derivatives of every BinaryOp, the broadcast index map
// (out flat index -> a / b flat index, strides 0 on broadcast axes) and the host-side "collapse"
// that merges adjacent axes with the same broadcast pattern so common cases become 1-D or 2-D.
// Covered by tests/ops/binary_test.cpp and tests/gpu/binary_parity_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/binary.h"
#include "tensor/philox.h"  // MOE_HD
#include "tensor/shape.h"

namespace moe {

template <class T>
MOE_HD T binary_value(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::maximum:
      return a >= b ? a : b;
    case BinaryOp::minimum:
      return a <= b ? a : b;
  }
  return a;
}

/// d op(a, b) / da (wrt_b = false) or / db (wrt_b = true). Ties of maximum/minimum go to a.
template <class T>
MOE_HD T binary_partial(BinaryOp op, T a, T b, bool wrt_b) {
  switch (op) {
    case BinaryOp::add:
      return T(1);
    case BinaryOp::sub:
      return wrt_b ? T(-1) : T(1);
    case BinaryOp::mul:
      return wrt_b ? a : b;
    case BinaryOp::div:
      return wrt_b ? -a / (b * b) : T(1) / b;
    case BinaryOp::maximum:
      return (a >= b) != wrt_b ? T(1) : T(0);
    case BinaryOp::minimum:
      return (a <= b) != wrt_b ? T(1) : T(0);
  }
  return T(0);
}

/// Maps a flat index of the (collapsed) output to the flat indices of both operands.
struct BroadcastIndex {
  int ndim = 0;
  int64_t dims[Shape::kMaxDims] = {};
  int64_t stride_a[Shape::kMaxDims] = {};  // 0 on axes where a is broadcast
  int64_t stride_b[Shape::kMaxDims] = {};
  MOE_HD void map(int64_t i, int64_t& ia, int64_t& ib) const {
    ia = 0;
    ib = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / dims[d], r = i - q * dims[d];
      ia += r * stride_a[d];
      ib += r * stride_b[d];
      i = q;
    }
  }
};

/// One group of merged output axes: its size and whether a / b are broadcast over it.
struct BroadcastGroup {
  int64_t size;
  bool a_bcast, b_bcast;
};

/// Merges adjacent output axes with the same (a broadcast, b broadcast) pattern and drops size-1
/// axes. `a` and `b` must broadcast to `out`. Zero groups means a single element.
inline std::vector<BroadcastGroup> collapse_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  std::vector<BroadcastGroup> groups;
  const int n = out.ndim();
  for (int k = 0; k < n; ++k) {
    if (out[k] == 1) continue;
    const int ia = a.ndim() - n + k, ib = b.ndim() - n + k;
    const bool ab = ia < 0 || a[ia] == 1, bb = ib < 0 || b[ib] == 1;
    if (!groups.empty() && groups.back().a_bcast == ab && groups.back().b_bcast == bb)
      groups.back().size *= out[k];
    else
      groups.push_back({out[k], ab, bb});
  }
  return groups;
}

/// The index map of collapsed groups (row-major strides of the non-broadcast groups).
inline BroadcastIndex make_broadcast_index(const std::vector<BroadcastGroup>& groups) {
  BroadcastIndex ix;
  ix.ndim = static_cast<int>(groups.size());
  int64_t sa = 1, sb = 1;
  for (int d = ix.ndim - 1; d >= 0; --d) {
    const BroadcastGroup& g = groups[static_cast<size_t>(d)];
    ix.dims[d] = g.size;
    ix.stride_a[d] = g.a_bcast ? 0 : sa;
    ix.stride_b[d] = g.b_bcast ? 0 : sb;
    if (!g.a_bcast) sa *= g.size;
    if (!g.b_bcast) sb *= g.size;
  }
  return ix;
}

}  // namespace moe
