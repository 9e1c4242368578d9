// Attention dropout, shared by the CPU reference and the CUDA kernels of fused attention (attention.h):
// the attention weight p_ij of query i and key j in head h of batch row b is kept with probability
// 1 - rate and then scaled by 1 / (1 - rate), else dropped. The draw is Philox's uniform number for
// element ((b * H + h) * Tq + i) * Tk + j of stream `stream` under `seed` (tensor/philox.h), so the
// CPU and every GPU drop the same weights. The log-sum-exp saved for the backward pass is that of the
// undropped weights. Covered by tests/ops/attention_dropout_test.cpp and
// tests/gpu/attention_parity_test.cpp.
#pragma once
#include <cstdint>

#include "tensor/philox.h"

namespace moe {

struct AttentionDropout {
  float rate = 0;  // 0: no dropout (inference, or none asked)
  uint64_t seed = 0, stream = 0;
};

/// 0 (dropped) or 1 / (1 - rate) for the weight (b, h, i, j) of an attention of H query heads, Tq
/// queries and Tk keys; 1 when rate is 0.
MOE_HD float attention_keep(const AttentionDropout& d, long long b, long long h, long long i, long long j, long long H,
                            long long Tq, long long Tk) {
  if (d.rate <= 0.f) return 1.f;
  const auto index = static_cast<uint64_t>(((b * H + h) * Tq + i) * Tk + j);
  return philox_uniform(d.seed, d.stream, index) < d.rate ? 0.f : 1.f / (1.f - d.rate);
}

}  // namespace moe
