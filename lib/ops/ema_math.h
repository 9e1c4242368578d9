// The per-element EMA update shared by the CPU reference (ema.cpp) and the CUDA kernel
// (cuda/ops/ema.cu), so that both devices compute the same f32 value:
//   e = decay * e + keep * p,   keep = 1 - decay (computed once, in f32, by the caller)
// Covered by tests/ops/ema_test.cpp.
#pragma once
#include "tensor/philox.h"  // MOE_HD

namespace moe {

MOE_HD float ema_element(float e, float p, float decay, float keep) { return decay * e + keep * p; }

}  // namespace moe
