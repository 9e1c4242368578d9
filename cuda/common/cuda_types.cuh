// Device-side element types: conversions between f32 and the storage types (float, __nv_bfloat16,
// __half), and MOE_FLOAT_SWITCH, which runs a block of code with T bound to the tensor's type.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/error.h"
#include "tensor/dtype.h"

namespace moe::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(double v) { return static_cast<float>(v); }

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ double from_float<double>(float v) { return v; }

}  // namespace moe::cuda

/// Runs BODY with T = float / __nv_bfloat16 / __half according to `dtype`; other dtypes are an
/// error naming `opname`.
#define MOE_FLOAT_SWITCH(dtype, opname, T, ...)                                                     \
  do {                                                                                              \
    switch (dtype) {                                                                                \
      case ::moe::DType::f32: { using T = float; __VA_ARGS__; break; }                              \
      case ::moe::DType::bf16: { using T = __nv_bfloat16; __VA_ARGS__; break; }                     \
      case ::moe::DType::f16: { using T = __half; __VA_ARGS__; break; }                             \
      default: MOE_FAIL(opname, ": the CUDA kernel supports f32, bf16 and f16, not ", ::moe::dtype_name(dtype)); \
    }                                                                                               \
  } while (0)
