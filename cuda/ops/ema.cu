// CUDA parameter EMA (see lib/ops/ema.h; formula in lib/ops/ema_math.h): one pass reads ema and
// value once and writes ema once, with float4 (16-byte) loads and stores when both pointers are
// 16-byte aligned (store buffers and ranges starting at multiples of 16 elements), then a scalar
// tail; unaligned views take the scalar loop only. Parity: tests/gpu/ema_parity_test.cpp.
#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/ema.h"
#include "ops/ema_math.h"

namespace moe::cuda {
namespace {
__global__ void ema_kernel(float* __restrict__ e, const float* __restrict__ p, long long n, float decay, float keep,
                           bool vec) {
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (vec) {
    const long long n4 = n >> 2;
    for (long long i = tid; i < n4; i += stride) {
      float4 E = reinterpret_cast<float4*>(e)[i];
      const float4 P = reinterpret_cast<const float4*>(p)[i];
      E.x = ema_element(E.x, P.x, decay, keep);
      E.y = ema_element(E.y, P.y, decay, keep);
      E.z = ema_element(E.z, P.z, decay, keep);
      E.w = ema_element(E.w, P.w, decay, keep);
      reinterpret_cast<float4*>(e)[i] = E;
    }
    done = n4 << 2;
  }
  for (long long i = done + tid; i < n; i += stride) e[i] = ema_element(e[i], p[i], decay, keep);
}
}  // namespace

void ema_update(const Tensor& ema, const Tensor& value, float decay) {
  const long long n = ema.numel();
  auto* e = static_cast<float*>(ema.raw());
  const auto* p = static_cast<const float*>(value.raw());
  const bool vec = reinterpret_cast<uintptr_t>(e) % 16 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  ema_kernel<<<grid_for(vec ? (n + 3) / 4 : n), 256, 0, stream(ema.device())>>>(e, p, n, decay, 1.f - decay, vec);
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
