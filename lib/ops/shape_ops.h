// Data-movement kernels behind concat / split / slice / transpose (graph operators in
// lib/graph/expr/shape_ops.h; reshape is a view and needs no kernel).
//   strided_copy: for r < rows, c < len: dst[dst_offset + r*dst_stride + c] (+)= src[src_offset + r*src_stride + c]
//     (one (outer, axis, inner) decomposition serves concat, split, slice and their backwards).
//   transpose:    y[i_perm[0], ..., i_perm[n-1]] (+)= x[i_0, ..., i_{n-1}], i.e. y.shape[k] = x.shape[perm[k]].
// Plain copies work for every dtype (bytes move unchanged); accumulation (+=) needs a floating dtype.
// Covered by tests/ops/shape_ops_test.cpp and tests/gpu/shape_ops_parity_test.cpp.
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset, int64_t dst_offset, bool accumulate);
void transpose(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate);
}  // namespace cpu
namespace cuda {
void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset, int64_t dst_offset, bool accumulate);
void transpose(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate);
}  // namespace cuda

/// Copies (or adds, with accumulate) `rows` runs of `len` elements between flat element ranges of
/// src and dst (same dtype and device); every addressed element must lie inside its tensor.
void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset = 0, int64_t dst_offset = 0, bool accumulate = false);

/// Checks that `perm` is a permutation of 0..ndim-1 (negative entries count from the end) and
/// returns it normalised; errors name `op` and the shape.
std::vector<int> normalize_perm(const char* op, const Shape& shape, const std::vector<int>& perm);
/// The shape of x transposed by `perm` (y.shape[k] = x.shape[perm[k]]).
Shape transpose_shape(const Shape& shape, const std::vector<int>& perm);
/// y = x permuted by `perm` (y += ... with accumulate); y must have transpose_shape(x.shape, perm).
void transpose_forward(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate = false);
/// The inverse permutation: inverse[perm[k]] = k.
std::vector<int> inverse_perm(const std::vector<int>& perm);

/// Collapses a permutation: merges input axes that stay adjacent in the output and drops size-1
/// axes. Returns the reduced input dims and permutation (at least one axis). Shared by CPU and CUDA.
void collapse_perm(const Shape& shape, const std::vector<int>& perm, std::vector<int64_t>& dims,
                   std::vector<int>& out_perm);

}  // namespace moe
