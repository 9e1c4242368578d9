// CUDA kernel of the dtype casts (see lib/ops/cast.h): between f32, bf16, f16 (round to nearest
// even) and between i32 and f32 (float -> int rounds toward zero and saturates, NaN -> 0, as PTX
// cvt.rzi does). With `accumulate` (backward) it computes out += cast(x) in f32. A coalesced
// grid-stride loop, one element per thread per step (memory bound).
// Tests: tests/gpu/cast_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/cast.h"

namespace moe::cuda {
namespace {

__device__ __forceinline__ float load_f(float v) { return v; }
__device__ __forceinline__ float load_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float load_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float load_f(int v) { return __int2float_rn(v); }

template <class T>
__device__ __forceinline__ T store_f(float v) {
  return from_float<T>(v);
}
template <>
__device__ __forceinline__ int store_f<int>(float v) {
  return __float2int_rz(v);
}

template <class TI, class TO>
__global__ void cast_kernel(const TI* x, TO* y, long long n, bool accumulate) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = load_f(x[i]);
    if (accumulate) v += load_f(y[i]);
    y[i] = store_f<TO>(v);
  }
}

template <class TI, class TO>
void launch(const Tensor& x, Tensor& out, bool accumulate) {
  const long long n = x.numel();
  cast_kernel<TI, TO><<<grid_for(n), 256, 0, stream(x.device())>>>(static_cast<const TI*>(x.raw()),
                                                                   static_cast<TO*>(out.raw()), n, accumulate);
  MOE_KERNEL_CHECK();
}

template <class TI>
void launch_from(const Tensor& x, Tensor& out, bool accumulate) {
  switch (out.dtype()) {
    case DType::f32:
      return launch<TI, float>(x, out, accumulate);
    case DType::bf16:
      return launch<TI, __nv_bfloat16>(x, out, accumulate);
    case DType::f16:
      return launch<TI, __half>(x, out, accumulate);
    case DType::i32:
      return launch<TI, int>(x, out, false);
    default:
      MOE_FAIL("cast: the CUDA kernel cannot write ", dtype_name(out.dtype()), " (shape ", out.shape(), ")");
  }
}

}  // namespace

void cast_forward(const Tensor& x, Tensor& out, bool accumulate) {
  if (x.numel() == 0) return;
  switch (x.dtype()) {
    case DType::f32:
      return launch_from<float>(x, out, accumulate);
    case DType::bf16:
      return launch_from<__nv_bfloat16>(x, out, accumulate);
    case DType::f16:
      return launch_from<__half>(x, out, accumulate);
    case DType::i32:
      return launch_from<int>(x, out, accumulate);
    default:
      MOE_FAIL("cast: the CUDA kernel cannot read ", dtype_name(x.dtype()), " (shape ", x.shape(), ")");
  }
}

}  // namespace moe::cuda
