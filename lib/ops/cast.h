// dtype casts: out = cast(x) between f32, f64 (CPU only), bf16, f16 (round to nearest even), and
// between i32 and f32 (float -> int truncates toward zero, saturates at the i32 range, NaN -> 0,
// as CUDA's __float2int_rz); u8 (a padding mask) to any floating type, so that layers turn a mask on
// the device into weights without reading it on the host. Backward dx += cast(dy) for floating types
// (integers take no gradient).
// CPU reference in lib/ops/cast.cpp (bf16/f16 through the host types of tensor/dtype.h),
// CUDA in cuda/ops/cast.cu. Covered by tests/ops/cast_test.cpp and tests/gpu/cast_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void cast_forward(const Tensor& x, Tensor& out, bool accumulate);
}  // namespace cpu
namespace cuda {
void cast_forward(const Tensor& x, Tensor& out, bool accumulate);
}  // namespace cuda

/// out = x converted to out.dtype() (same shape, same device).
void cast_forward(const Tensor& x, Tensor& out);
/// dx += dy converted to dx.dtype(); both must be floating point.
void cast_backward(const Tensor& dy, Tensor& dx);

}  // namespace moe
