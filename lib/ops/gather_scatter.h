// Row and last-axis gathers and scatter-adds (MoE dispatch/combine, label picking), with i32 indices.
//   index_select:     out[m, ...] (+)= x[idx[m], ...]            x [N, ...], idx [M] -> out [M, ...]
//   index_add:        dst[idx[m], ...] += src[m, ...]             (repeated indices add up)
//   gather_last:      out[r, j] (+)= x[r, idx[r, j]]              x [..., V], idx [..., k] -> [..., k]
//   scatter_add_last: dst[r, idx[r, j]] += src[r, j]
// index_select and index_add are each other's backward, as are gather_last and scatter_add_last.
// CPU: out-of-range indices throw, naming the op, index and bound. CUDA: see ops/index_errors.h.
// Covered by tests/ops/gather_scatter_test.cpp and tests/gpu/gather_scatter_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void index_select(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate);
void index_add(Tensor& dst, const Tensor& idx, const Tensor& src);
void gather_last(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate);
void scatter_add_last(Tensor& dst, const Tensor& idx, const Tensor& src);
}  // namespace cpu
namespace cuda {
void index_select(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate);
void index_add(Tensor& dst, const Tensor& idx, const Tensor& src);
void gather_last(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate);
void scatter_add_last(Tensor& dst, const Tensor& idx, const Tensor& src);
}  // namespace cuda

/// The shape of index_select(x, idx): [M] + x.shape[1:].
Shape index_select_shape(const char* op, const Shape& x, const Shape& idx);
/// out (+)= x[idx]; plain copies work for any dtype of x, accumulation needs a floating dtype.
void index_select_forward(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate = false);
/// dst[idx[m]] += src[m] (floating dst; on CUDA deterministic: sorted indices, ordered sums).
void index_add_forward(Tensor& dst, const Tensor& idx, const Tensor& src);
/// out (+)= x gathered along the last axis at idx (out has idx's shape).
void gather_last_forward(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate = false);
/// dst[..., idx[..., j]] += src[..., j].
void scatter_add_last_forward(Tensor& dst, const Tensor& idx, const Tensor& src);

}  // namespace moe
