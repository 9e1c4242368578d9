// CUDA kernels of the MoE routing ops (math in lib/ops/moe_gating.h and moe_gating_math.h):
// f32 / bf16 / f16 storage with f32 arithmetic. Element-wise kernels use grid-stride loops; the
// prob_in_top_k backward gives each row one warp, which also reduces the two threshold gradients
// of its row with shuffles (no atomics, deterministic). Covered by tests/gpu/moe_gating_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "common/reduce.cuh"
#include "ops/moe_gating.h"
#include "ops/moe_gating_math.h"

namespace moe::cuda {
namespace {
constexpr int kThreads = 256;

template <class T>
__global__ void gate_noise_forward_kernel(const T* clean, const T* sigma, T* noisy, long long n, uint64_t seed,
                                          uint64_t stream) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    noisy[i] = from_float<T>(to_float(clean[i]) + gate_noise_value(seed, stream, i) * to_float(sigma[i]));
}

template <class T>
__global__ void gate_noise_backward_kernel(const T* dnoisy, T* dclean, T* dsigma, long long n, uint64_t seed,
                                           uint64_t stream) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float dh = to_float(dnoisy[i]);
    if (dclean) dclean[i] = from_float<T>(to_float(dclean[i]) + dh);
    if (dsigma) dsigma[i] = from_float<T>(to_float(dsigma[i]) + dh * gate_noise_value(seed, stream, i));
  }
}

template <class T>
__global__ void prob_forward_kernel(const T* clean, const T* noisy, const T* sigma, const T* top, T* prob,
                                    long long total, int n, int m) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long r = e / n;
    bool in;
    const float tau = gate_threshold<float>(to_float(noisy[e]), to_float(top[r * m + m - 1]),
                                            to_float(top[r * m + m - 2]), &in);
    prob[e] = from_float<T>(gate_normal_cdf<float>((to_float(clean[e]) - tau) / to_float(sigma[e])));
  }
}

// One warp per row: gradients into clean and sigma element-wise, the two threshold sums reduced.
template <class T>
__global__ void prob_backward_kernel(const T* clean, const T* noisy, const T* sigma, const T* top, const T* dprob,
                                     T* dclean, T* dsigma, T* dtop, long long rows, int n, int m) {
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    const float t_in = to_float(top[r * m + m - 1]), t_out = to_float(top[r * m + m - 2]);
    float sum_in = 0.f, sum_out = 0.f;
    for (int i = lane; i < n; i += 32) {
      const long long e = r * n + i;
      bool in;
      const float tau = gate_threshold<float>(to_float(noisy[e]), t_in, t_out, &in);
      const float s = to_float(sigma[e]);
      const float z = (to_float(clean[e]) - tau) / s;
      const float g = to_float(dprob[e]) * gate_normal_pdf<float>(z) / s;
      if (dclean) dclean[e] = from_float<T>(to_float(dclean[e]) + g);
      if (dsigma) dsigma[e] = from_float<T>(to_float(dsigma[e]) - g * z);
      if (in) sum_in -= g;
      else sum_out -= g;
    }
    sum_in = warp_sum(sum_in);
    sum_out = warp_sum(sum_out);
    if (dtop && lane == 0) {
      dtop[r * m + m - 1] = from_float<T>(to_float(dtop[r * m + m - 1]) + sum_in);
      dtop[r * m + m - 2] = from_float<T>(to_float(dtop[r * m + m - 2]) + sum_out);
    }
  }
}

__global__ void route_index_kernel(const int32_t* outer, const int32_t* inner, int divisor, int inner_size,
                                   int32_t* out, long long total, int cols) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x)
    out[e] = ((outer ? outer[e / cols] : static_cast<int32_t>(e / cols)) / divisor) * inner_size + (inner ? inner[e] : 0);
}

// Out-of-range expert ids give mask 0 (the CPU reference reports them as errors).
template <class T>
__global__ void threshold_mask_kernel(const T* x, const int32_t* experts, const T* thresholds, T* mask,
                                      long long total, int cols, int n) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const int ex = experts ? experts[e] : static_cast<int>(e % cols);
    const bool keep = ex >= 0 && ex < n && to_float(x[e]) > to_float(thresholds[ex]);
    mask[e] = from_float<T>(keep ? 1.f : 0.f);
  }
}

template <class T>
T* opt_ptr(Tensor* t) {
  return t ? static_cast<T*>(t->raw()) : nullptr;
}
}  // namespace

void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream_id) {
  const long long n = clean.numel();
  if (n == 0) return;
  MOE_FLOAT_SWITCH(clean.dtype(), "gate_noise", T, {
    gate_noise_forward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream(clean.device())>>>(
        static_cast<const T*>(clean.raw()), static_cast<const T*>(sigma.raw()), static_cast<T*>(noisy.raw()), n, seed,
        stream_id);
  });
  MOE_KERNEL_CHECK();
}

void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream_id) {
  const long long n = sigma.numel();
  if (n == 0 || (!dclean && !dsigma)) return;
  MOE_FLOAT_SWITCH(sigma.dtype(), "gate_noise", T, {
    gate_noise_backward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream(sigma.device())>>>(
        static_cast<const T*>(dnoisy.raw()), opt_ptr<T>(dclean), opt_ptr<T>(dsigma), n, seed, stream_id);
  });
  MOE_KERNEL_CHECK();
}

void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob) {
  const long long total = clean.numel();
  if (total == 0) return;
  const int n = static_cast<int>(clean.shape()[1]), m = static_cast<int>(top.shape()[1]);
  MOE_FLOAT_SWITCH(clean.dtype(), "prob_in_top_k", T, {
    prob_forward_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream(clean.device())>>>(
        static_cast<const T*>(clean.raw()), static_cast<const T*>(noisy.raw()), static_cast<const T*>(sigma.raw()),
        static_cast<const T*>(top.raw()), static_cast<T*>(prob.raw()), total, n, m);
  });
  MOE_KERNEL_CHECK();
}

void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop) {
  const long long rows = clean.shape()[0];
  if (clean.numel() == 0 || (!dclean && !dsigma && !dtop)) return;
  const int n = static_cast<int>(clean.shape()[1]), m = static_cast<int>(top.shape()[1]);
  const int warps_per_block = kThreads / 32;
  const unsigned blocks = grid_for(rows, warps_per_block);
  MOE_FLOAT_SWITCH(clean.dtype(), "prob_in_top_k", T, {
    prob_backward_kernel<T><<<blocks, kThreads, 0, stream(clean.device())>>>(
        static_cast<const T*>(clean.raw()), static_cast<const T*>(noisy.raw()), static_cast<const T*>(sigma.raw()),
        static_cast<const T*>(top.raw()), static_cast<const T*>(dprob.raw()), opt_ptr<T>(dclean), opt_ptr<T>(dsigma),
        opt_ptr<T>(dtop), rows, n, m);
  });
  MOE_KERNEL_CHECK();
}

void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out) {
  const long long total = out.numel();
  if (total == 0) return;
  const int cols = inner.defined() ? static_cast<int>(inner.shape().last()) : 1;
  route_index_kernel<<<grid_for(total, kThreads), kThreads, 0, stream(out.device())>>>(
      outer.defined() ? static_cast<const int32_t*>(outer.raw()) : nullptr, inner.defined() ? static_cast<const int32_t*>(inner.raw()) : nullptr,
      static_cast<int>(divisor), static_cast<int>(inner_size), static_cast<int32_t*>(out.raw()), total, cols);
  MOE_KERNEL_CHECK();
}

void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask) {
  const long long total = x.numel();
  if (total == 0) return;
  const int cols = static_cast<int>(x.shape().last()), n = static_cast<int>(thresholds.numel());
  MOE_FLOAT_SWITCH(x.dtype(), "threshold_mask", T, {
    threshold_mask_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream(x.device())>>>(
        static_cast<const T*>(x.raw()), experts.defined() ? static_cast<const int32_t*>(experts.raw()) : nullptr,
        static_cast<const T*>(thresholds.raw()), static_cast<T*>(mask.raw()), total, cols, n);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
