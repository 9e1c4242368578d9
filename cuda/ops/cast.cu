// CUDA kernel of the dtype casts (see lib/ops/cast.h): between f32, bf16, f16 (round to nearest
// even; same-dtype pairs only accumulate) and between i32 and f32 (float -> int rounds toward zero
// and saturates, NaN -> 0, as PTX cvt.rzi does), and from u8 (padding masks) to the three float types.
// With `accumulate` (backward) it computes
// out += cast(x) in f32. Memory bound: 4 elements per thread with one vector load and one vector
// store (16 bytes of f32/i32, 8 of bf16/f16) when both pointers are aligned, a scalar grid-stride
// loop for the tail or otherwise.
// Tests: tests/gpu/cast_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

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
__device__ __forceinline__ float load_f(uint8_t v) { return static_cast<float>(v); }

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

template <class T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};

template <class TI, class TO>
__global__ void cast_quad_kernel(const Quad<TI>* x, Quad<TO>* y, long long quads, bool accumulate) {
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < quads;
       q += (long long)gridDim.x * blockDim.x) {
    const Quad<TI> in = x[q];
    Quad<TO> out;
    if (accumulate) out = y[q];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float v = load_f(in.v[k]);
      if (accumulate) v += load_f(out.v[k]);
      out.v[k] = store_f<TO>(v);
    }
    y[q] = out;
  }
}

template <class TI, class TO>
void launch(const Tensor& x, Tensor& out, bool accumulate) {
  const long long n = x.numel();
  const TI* px = static_cast<const TI*>(x.raw());
  TO* py = static_cast<TO*>(out.raw());
  cudaStream_t s = stream(x.device());
  const bool aligned = reinterpret_cast<uintptr_t>(px) % sizeof(Quad<TI>) == 0 &&
                       reinterpret_cast<uintptr_t>(py) % sizeof(Quad<TO>) == 0;
  const long long quads = aligned ? n / 4 : 0;
  if (quads > 0) {
    cast_quad_kernel<TI, TO><<<grid_for(quads), 256, 0, s>>>(reinterpret_cast<const Quad<TI>*>(px),
                                                             reinterpret_cast<Quad<TO>*>(py), quads, accumulate);
    MOE_KERNEL_CHECK();
  }
  if (quads * 4 < n) {
    cast_kernel<TI, TO>
        <<<grid_for(n - quads * 4), 256, 0, s>>>(px + quads * 4, py + quads * 4, n - quads * 4, accumulate);
    MOE_KERNEL_CHECK();
  }
}

}  // namespace

void cast_forward(const Tensor& x, Tensor& out, bool accumulate) {
  if (x.numel() == 0) return;
  // i32 only to and from f32, u8 only to the float types (lib/ops/cast.cpp refuses the rest before
  // dispatch, and integers take no gradient, so never accumulate); the three float types in every
  // pair, the same-dtype pairs for cast_backward (dx += dy).
  const DType from = x.dtype(), to = out.dtype();
  if (from == DType::i32 && to == DType::f32) return launch<int, float>(x, out, false);
  if (from == DType::f32 && to == DType::i32) return launch<float, int>(x, out, false);
  if (from == DType::u8) {
    MOE_FLOAT_SWITCH(to, "cast (u8 to)", TO, { launch<uint8_t, TO>(x, out, false); });
    return;
  }
  MOE_CHECK(from != DType::i32 && to != DType::i32, "cast: the CUDA kernel casts i32 only to and from f32, not ",
            dtype_name(from), " to ", dtype_name(to), " (shape ", x.shape(), ")");
  MOE_FLOAT_SWITCH(from, "cast (source)", TI, {
    MOE_FLOAT_SWITCH(to, "cast (target)", TO, { launch<TI, TO>(x, out, accumulate); });
  });
}

}  // namespace moe::cuda
