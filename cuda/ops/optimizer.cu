// CUDA fused optimizer kernels (formulas shared with the CPU in lib/ops/optimizer_math.h): one
// pass reads param, grad and state once and writes param and state once, with float4 (16-byte)
// loads and stores when every pointer is 16-byte aligned (store ranges start at multiples of 16
// elements) plus a scalar tail. sum_squares: f32 partial sums per thread/block, a second
// one-block kernel adds the partials in double. The step ops (optimizer_math.h's StepSlot) keep the
// whole step on the device: add_sum_squares adds into a slot, prepare_step is one thread running the
// same prepare_step as the CPU, and the update kernels take their coefficients from the slots when given
// them (skipping the update when the slots say so), so nothing waits for the host.
// Parity: tests/gpu/optimizer_parity_test.cpp; no sync: tests/emu/optimizer_no_sync_test.cpp.
#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/reduce.cuh"
#include "ops/optimizer.h"

namespace moe::cuda {
namespace {
constexpr int kThreads = 256;

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// scalars != nullptr: lr, grad scale and bias corrections from the step's slots, nothing done on a skip.
__global__ void adam_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                            float* __restrict__ v, long long n, AdamCoeffs c, bool vec, const double* scalars,
                            StepScale which) {
  if (scalars) {
    if (scalars[StepSlot::skip] != 0) return;
    c = adam_coeffs(c, scalars, which);
  }
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

/// buf == nullptr when there is no momentum state; scalars as for adam_kernel.
__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ buf, long long n,
                           SgdCoeffs c, bool vec, const double* scalars, StepScale which) {
  if (scalars) {
    if (scalars[StepSlot::skip] != 0) return;
    c = sgd_coeffs(c, scalars, which);
  }
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

/// One block of kThreads: out[0] = sum of the partials (accumulate: out[0] += it), in double.
__global__ void sum_partials_kernel(const float* __restrict__ partial, int count, double* __restrict__ out,
                                    bool accumulate) {
  __shared__ double sh[kThreads];
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = accumulate ? out[0] + sh[0] : sh[0];
}

__global__ void set_step_inputs_kernel(double* s, double lr, double grad_scale) {
  s[StepSlot::lr] = lr;
  s[StepSlot::grad_scale] = grad_scale;
}

__global__ void prepare_step_kernel(double* s, StepConfig c) { ::moe::prepare_step(s, c); }

__global__ void all_finite_kernel(const float* __restrict__ x, long long n, int* __restrict__ bad) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (!isfinite(x[i])) *bad = 1;  // benign race: every writer stores 1
}

unsigned blocks_for(long long n, bool vec, unsigned cap) {
  const unsigned b = grid_for(vec ? (n + 3) / 4 : n, kThreads);
  return b < cap ? b : cap;
}

void launch_adam(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c,
                 const double* scalars, StepScale which) {
  const long long n = param.numel();
  float *p = static_cast<float*>(param.raw()), *pm = static_cast<float*>(m.raw()), *pv = static_cast<float*>(v.raw());
  const float* g = static_cast<const float*>(grad.raw());
  const bool vec = aligned16(p) && aligned16(g) && aligned16(pm) && aligned16(pv);
  adam_kernel<<<blocks_for(n, vec, 132 * 16), kThreads, 0, stream(param.device())>>>(p, g, pm, pv, n, c, vec, scalars,
                                                                                     which);
  MOE_KERNEL_CHECK();
}

void launch_sgd(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c, const double* scalars,
                StepScale which) {
  const long long n = param.numel();
  float* p = static_cast<float*>(param.raw());
  const float* g = static_cast<const float*>(grad.raw());
  float* b = buf.defined() ? static_cast<float*>(buf.raw()) : nullptr;
  const bool vec = aligned16(p) && aligned16(g) && aligned16(b);
  sgd_kernel<<<blocks_for(n, vec, 132 * 16), kThreads, 0, stream(param.device())>>>(p, g, b, n, c, vec, scalars, which);
  MOE_KERNEL_CHECK();
}

/// out (one f64 on t's device) = or += the sum of squares of t.
void sum_squares_into(const Tensor& t, double* out, bool accumulate) {
  const long long n = t.numel();
  const float* x = static_cast<const float*>(t.raw());
  const bool vec = aligned16(x);
  const unsigned blocks = blocks_for(n, vec, 1024);
  Tensor partial = Tensor::empty(Shape{static_cast<int64_t>(blocks)}, DType::f32, t.device());
  cudaStream_t s = stream(t.device());
  sum_squares_partial_kernel<<<blocks, kThreads, 0, s>>>(x, n, vec, static_cast<float*>(partial.raw()));
  MOE_KERNEL_CHECK();
  sum_partials_kernel<<<1, kThreads, 0, s>>>(static_cast<const float*>(partial.raw()), static_cast<int>(blocks), out,
                                             accumulate);
  MOE_KERNEL_CHECK();
}
}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c) {
  launch_adam(param, grad, m, v, c, nullptr, StepScale::clipped);
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c) {
  launch_sgd(param, grad, buf, c, nullptr, StepScale::clipped);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which) {
  launch_adam(param, grad, m, v, base, static_cast<const double*>(scalars.raw()), which);
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which) {
  launch_sgd(param, grad, buf, base, static_cast<const double*>(scalars.raw()), which);
}

void sum_squares(const Tensor& t, double& out) {
  Tensor result = Tensor::empty(Shape{1}, DType::f64, t.device());
  sum_squares_into(t, static_cast<double*>(result.raw()), false);
  out = result.item();
}

void add_sum_squares(const Tensor& t, const Tensor& acc) { sum_squares_into(t, static_cast<double*>(acc.raw()), true); }

void set_step_inputs(const Tensor& scalars, double lr, double grad_scale) {
  set_step_inputs_kernel<<<1, 1, 0, stream(scalars.device())>>>(static_cast<double*>(scalars.raw()), lr, grad_scale);
  MOE_KERNEL_CHECK();
}

void prepare_step(const Tensor& scalars, const StepConfig& c) {
  prepare_step_kernel<<<1, 1, 0, stream(scalars.device())>>>(static_cast<double*>(scalars.raw()), c);
  MOE_KERNEL_CHECK();
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
