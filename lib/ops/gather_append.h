// One step of a decoding cache: the kept hypotheses' past keys (or values) followed by the fresh ones,
//   out[i] = concat(past[order[i]], fresh[i]) along axis 1      (past[i] where order is undefined),
// for past [M, t, ...], order i32 [N], fresh [N, s, ...] -> out [N, t + s, ...], any dtype (bytes move
// unchanged). Beam search reorders the hypotheses after every step and the next step appends to them; doing
// both in one copy halves the bytes moved and allocates one tensor instead of two. The CPU copies each row's
// two runs directly; other devices run index_select then two strided copies.
// Covered by tests/ops/gather_append_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void gather_append(const Tensor& past, const Tensor& order, const Tensor& fresh, Tensor& out);
}  // namespace cpu

/// The checked entry point (errors name gather_append, the shapes and any index out of range).
Tensor gather_append(const Tensor& past, const Tensor& order, const Tensor& fresh);

}  // namespace moe
