// CUDA beam-search step scores (see lib/ops/beam_scores.h): out[r, v] = cum[r] + logp[r, v]
// with the masked tokens at -inf. Memory-bound: f32 rows whose length is a multiple of 4 go through
// 16-byte float4 loads and stores; other rows and bf16/f16 storage use a scalar grid-stride loop.
// Arithmetic in f32. Covered by tests/gpu/beam_scores_parity_test.cpp.
#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/beam_scores.h"

namespace moe::cuda {
namespace {
__device__ __forceinline__ float masked(float s, long long t, uint8_t mode, BeamSpecials ids) {
  const float ninf = -__int_as_float(0x7f800000);
  if (t == ids.pad || t == ids.bos) return ninf;
  if (mode == 1 && t == ids.eos) return ninf;
  if (mode == 2 && t != ids.eos) return ninf;
  return s;
}

template <class T>
__global__ void beam_scores_kernel(const T* logp, const float* cum, const uint8_t* mode, BeamSpecials ids, float* out,
                                   long long n, long long v) {
  const long long total = n * v;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / v, t = i - r * v;
    out[i] = masked(cum[r] + to_float(logp[i]), t, mode[r], ids);
  }
}

/// v % 4 == 0 and 16-byte aligned buffers: one float4 per thread and iteration.
__global__ void beam_scores_vec4_kernel(const float4* logp, const float* cum, const uint8_t* mode, BeamSpecials ids,
                                        float4* out, long long n, long long v4) {
  const long long total = n * v4;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / v4, t = (i - r * v4) * 4;
    const float c = cum[r];
    const uint8_t m = mode[r];
    const float4 x = logp[i];
    float4 y;
    y.x = masked(c + x.x, t, m, ids);
    y.y = masked(c + x.y, t + 1, m, ids);
    y.z = masked(c + x.z, t + 2, m, ids);
    y.w = masked(c + x.w, t + 3, m, ids);
    out[i] = y;
  }
}
}  // namespace

void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out) {
  const long long n = logp.shape()[0], v = logp.shape()[1];
  if (n * v == 0) return;
  cudaStream_t s = stream(logp.device());
  const auto* c = static_cast<const float*>(cum.raw());
  const auto* m = static_cast<const uint8_t*>(mode.raw());
  const bool aligned =
      (reinterpret_cast<uintptr_t>(logp.raw()) % 16 == 0) && (reinterpret_cast<uintptr_t>(out.raw()) % 16 == 0);
  if (logp.dtype() == DType::f32 && v % 4 == 0 && aligned) {
    beam_scores_vec4_kernel<<<grid_for(n * v / 4), 256, 0, s>>>(static_cast<const float4*>(logp.raw()), c, m, ids,
                                                                static_cast<float4*>(out.raw()), n, v / 4);
    MOE_KERNEL_CHECK();
    return;
  }
  MOE_FLOAT_SWITCH(logp.dtype(), "beam_scores", T, {
    beam_scores_kernel<T><<<grid_for(n * v), 256, 0, s>>>(static_cast<const T*>(logp.raw()), c, m, ids,
                                                          static_cast<float*>(out.raw()), n, v);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
