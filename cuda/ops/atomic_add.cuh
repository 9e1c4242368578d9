// atomic_add(p, v): *p += v for f32 / bf16 / f16 storage (bf16 needs sm_80+, as built by default).
// Used by the scatter-adds of embedding and gather_scatter; covered by their parity tests.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace moe::cuda {

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16(v)); }
__device__ __forceinline__ void atomic_add(__half* p, float v) { atomicAdd(p, __float2half(v)); }

/// Four consecutive f32 adds (p 16-byte aligned): one vector atomic on sm_90, else four scalar ones.
__device__ __forceinline__ void atomic_add4(float* p, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(p), v);
#else
  atomicAdd(p, v.x);
  atomicAdd(p + 1, v.y);
  atomicAdd(p + 2, v.z);
  atomicAdd(p + 3, v.w);
#endif
}

}  // namespace moe::cuda
