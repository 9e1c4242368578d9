// Exponential moving average of parameters (train.ema_decay; Marian's --exponential-smoothing,
// fairseq's EMA), in place over flat 1-D f32 tensors (a ParameterStore's values() buffer):
//   ema = decay * ema + (1 - decay) * value
// in f32 on both devices (formula in ema_math.h). Not a graph op: the trainer calls it after each
// update on the device the parameters live on. CPU reference in lib/ops/ema.cpp, CUDA (float4 when
// aligned, scalar tail) in cuda/ops/ema.cu. Covered by tests/ops/ema_test.cpp and
// tests/gpu/ema_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void ema_update(const Tensor& ema, const Tensor& value, float decay);
}  // namespace cpu
namespace cuda {
void ema_update(const Tensor& ema, const Tensor& value, float decay);
}  // namespace cuda

/// ema (updated in place) and value: f32 tensors of one shape on one device; decay in [0, 1).
void ema_update(const Tensor& ema, const Tensor& value, float decay);

}  // namespace moe
