// Element-wise binary ops with numpy broadcasting, forward and backward.
//   add a+b, sub a-b, mul a*b, div a/b (d/db = -a/b^2), maximum / minimum (gradient to the
//   selected operand; ties go to a). out has broadcast_shapes(a, b); backward ADDS
//   dout * d op/da into da (and likewise db), summed over the axes where the operand was broadcast.
// CPU reference in lib/ops/binary.cpp, CUDA in cuda/ops/binary.cu (math in binary_math.h).
// Covered by tests/ops/binary_test.cpp and tests/gpu/binary_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

enum class BinaryOp { add, sub, mul, div, maximum, minimum };
const char* binary_op_name(BinaryOp op);

namespace cpu {
void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db);
}  // namespace cpu
namespace cuda {
void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db);
}  // namespace cuda

/// out = op(a, b) with broadcasting; a, b, out share dtype and device, out has the broadcast shape.
void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
/// da += sum_to_shape(dout * d op/da), db likewise; nullptr = that gradient is not needed.
void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db);

}  // namespace moe
