// CUDA kernels of the element-wise unary ops (math shared with the CPU in lib/ops/unary_math.h).
// f32, bf16 and f16 storage; arithmetic in f32. Grid-stride loops.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/unary.h"
#include "ops/unary_math.h"

namespace moe::cuda {
namespace {
template <class T>
__global__ void unary_forward_kernel(UnaryOp op, const T* x, T* y, long long n, float alpha, float beta) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = from_float<T>(unary_value<float>(op, to_float(x[i]), alpha, beta));
}

template <class T>
__global__ void unary_backward_kernel(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, long long n,
                                      float alpha) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float d = unary_derivative<float>(op, to_float(x[i]), to_float(y[i]), alpha);
    dx[i] = from_float<T>(to_float(dx[i]) + to_float(dy[i]) * d);
  }
}
}  // namespace

void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha, float beta) {
  const long long n = x.numel();
  if (n == 0) return;
  MOE_FLOAT_SWITCH(x.dtype(), unary_op_name(op), T, {
    unary_forward_kernel<T><<<grid_for(n), 256, 0, stream(x.device())>>>(
        op, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), n, alpha, beta);
  });
  MOE_KERNEL_CHECK();
}

void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha) {
  const long long n = x.numel();
  if (n == 0) return;
  MOE_FLOAT_SWITCH(x.dtype(), unary_op_name(op), T, {
    unary_backward_kernel<T><<<grid_for(n), 256, 0, stream(x.device())>>>(
        op, static_cast<const T*>(x.raw()), static_cast<const T*>(y.raw()), static_cast<const T*>(dy.raw()),
        static_cast<T*>(dx.raw()), n, alpha);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
