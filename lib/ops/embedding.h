// Embedding lookup: out[s, :] = scale * table[ids[s], :] for a table [V, D] and i32 ids of any
// shape S (out: S + [D]); the output dtype may differ from the table's (an f32 master table read
// straight into bf16 activations). Backward: dtable[ids[s], :] += scale * dout[s, :] (repeated ids
// add up). CPU: an out-of-range id throws naming the id and V; CUDA zero-fills / skips it and
// records it (ops/index_errors.h). Covered by tests/ops/embedding_test.cpp and
// tests/gpu/embedding_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale);
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale);
}  // namespace cpu
namespace cuda {
void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale);
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale);
}  // namespace cuda

/// ids.shape + [D] for a table [V, D]; errors name the shapes.
Shape embedding_shape(const Shape& table, const Shape& ids);
/// out = scale * table[ids] (out: any floating dtype the device supports).
void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale = 1.f);
/// dtable[ids] += scale * dout.
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale = 1.f);

}  // namespace moe
