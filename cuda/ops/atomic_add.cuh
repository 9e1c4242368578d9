// atomic_add(p, v): *p += v for f32 / bf16 / f16 storage (bf16 needs sm_80+, as built by default).
// Used by scatter_add_last (gather_scatter.cu); covered by its parity test.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace moe::cuda {

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16(v)); }
__device__ __forceinline__ void atomic_add(__half* p, float v) { atomicAdd(p, __float2half(v)); }

}  // namespace moe::cuda
