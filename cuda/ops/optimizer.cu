// CUDA fused optimizer kernels (formulas shared with the CPU in lib/ops/optimizer_math.h): one
// pass reads param, grad and state once and writes param and state once, with float4 (16-byte)
// loads and stores when every pointer is 16-byte aligned (store ranges start at multiples of 16
// elements) plus a scalar tail. sum_squares: f32 partial sums per thread/block, a second
// one-block kernel adds the partials in double. Parity: tests/gpu/optimizer_parity_test.cpp.
#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/reduce.cuh"
#include "ops/optimizer.h"

namespace moe::cuda {
namespace {
constexpr int kThreads = 256;

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

__global__ void adam_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                            float* __restrict__ v, long long n, AdamCoeffs c, bool vec) {
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (vec) {
    const long long n4 = n >> 2;
    for (long long i = tid; i < n4; i += stride) {
      float4 P = reinterpret_cast<float4*>(p)[i], M = reinterpret_cast<float4*>(m)[i],
             V = reinterpret_cast<float4*>(v)[i];
      const float4 G = reinterpret_cast<const float4*>(g)[i];
      adam_element(P.x, G.x, M.x, V.x, c);
      adam_element(P.y, G.y, M.y, V.y, c);
      adam_element(P.z, G.z, M.z, V.z, c);
      adam_element(P.w, G.w, M.w, V.w, c);
      reinterpret_cast<float4*>(p)[i] = P;
      reinterpret_cast<float4*>(m)[i] = M;
      reinterpret_cast<float4*>(v)[i] = V;
    }
    done = n4 << 2;
  }
  for (long long i = done + tid; i < n; i += stride) adam_element(p[i], g[i], m[i], v[i], c);
}

/// buf == nullptr when there is no momentum state.
__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ buf, long long n,
                           SgdCoeffs c, bool vec) {
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (vec) {
    const long long n4 = n >> 2;
    for (long long i = tid; i < n4; i += stride) {
      float4 P = reinterpret_cast<float4*>(p)[i], B = buf ? reinterpret_cast<float4*>(buf)[i] : make_float4(0, 0, 0, 0);
      const float4 G = reinterpret_cast<const float4*>(g)[i];
      sgd_element(P.x, G.x, B.x, c);
      sgd_element(P.y, G.y, B.y, c);
      sgd_element(P.z, G.z, B.z, c);
      sgd_element(P.w, G.w, B.w, c);
      reinterpret_cast<float4*>(p)[i] = P;
      if (buf) reinterpret_cast<float4*>(buf)[i] = B;
    }
    done = n4 << 2;
  }
  for (long long i = done + tid; i < n; i += stride) {
    float b = buf ? buf[i] : 0.f;
    sgd_element(p[i], g[i], b, c);
    if (buf) buf[i] = b;
  }
}

__global__ void sum_squares_partial_kernel(const float* __restrict__ x, long long n, bool vec,
                                           float* __restrict__ partial) {
  __shared__ float scratch[32];
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  float s = 0.f;
  long long done = 0;
  if (vec) {
    const long long n4 = n >> 2;
    for (long long i = tid; i < n4; i += stride) {
      const float4 a = reinterpret_cast<const float4*>(x)[i];
      s += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
    }
    done = n4 << 2;
  }
  for (long long i = done + tid; i < n; i += stride) s += x[i] * x[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/// One block of kThreads: out[0] = sum of the partials, in double.
__global__ void sum_partials_kernel(const float* __restrict__ partial, int count, double* __restrict__ out) {
  __shared__ double sh[kThreads];
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sh[0];
}

__global__ void all_finite_kernel(const float* __restrict__ x, long long n, int* __restrict__ bad) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (!isfinite(x[i])) *bad = 1;  // benign race: every writer stores 1
}

unsigned blocks_for(long long n, bool vec, unsigned cap) {
  const unsigned b = grid_for(vec ? (n + 3) / 4 : n, kThreads);
  return b < cap ? b : cap;
}
}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c) {
  const long long n = param.numel();
  float *p = static_cast<float*>(param.raw()), *pm = static_cast<float*>(m.raw()), *pv = static_cast<float*>(v.raw());
  const float* g = static_cast<const float*>(grad.raw());
  const bool vec = aligned16(p) && aligned16(g) && aligned16(pm) && aligned16(pv);
  adam_kernel<<<blocks_for(n, vec, 132 * 16), kThreads, 0, stream(param.device())>>>(p, g, pm, pv, n, c, vec);
  MOE_KERNEL_CHECK();
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c) {
  const long long n = param.numel();
  float* p = static_cast<float*>(param.raw());
  const float* g = static_cast<const float*>(grad.raw());
  float* b = buf.defined() ? static_cast<float*>(buf.raw()) : nullptr;
  const bool vec = aligned16(p) && aligned16(g) && aligned16(b);
  sgd_kernel<<<blocks_for(n, vec, 132 * 16), kThreads, 0, stream(param.device())>>>(p, g, b, n, c, vec);
  MOE_KERNEL_CHECK();
}

void sum_squares(const Tensor& t, double& out) {
  const long long n = t.numel();
  const float* x = static_cast<const float*>(t.raw());
  const bool vec = aligned16(x);
  const unsigned blocks = blocks_for(n, vec, 1024);
  Tensor partial = Tensor::empty(Shape{static_cast<int64_t>(blocks)}, DType::f32, t.device());
  Tensor result = Tensor::empty(Shape{1}, DType::f64, t.device());
  cudaStream_t s = stream(t.device());
  sum_squares_partial_kernel<<<blocks, kThreads, 0, s>>>(x, n, vec, static_cast<float*>(partial.raw()));
  MOE_KERNEL_CHECK();
  sum_partials_kernel<<<1, kThreads, 0, s>>>(static_cast<const float*>(partial.raw()), static_cast<int>(blocks),
                                             static_cast<double*>(result.raw()));
  MOE_KERNEL_CHECK();
  out = result.item();
}

void all_finite(const Tensor& t, bool& out) {
  const long long n = t.numel();
  Tensor bad = Tensor::zeros(Shape{1}, DType::i32, t.device());
  all_finite_kernel<<<blocks_for(n, false, 2048), kThreads, 0, stream(t.device())>>>(static_cast<const float*>(t.raw()),
                                                                                     n, static_cast<int*>(bad.raw()));
  MOE_KERNEL_CHECK();
  out = bad.item() == 0.0;
}

}  // namespace moe::cuda
