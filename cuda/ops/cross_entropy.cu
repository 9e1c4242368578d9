// CUDA fused log-softmax + cross-entropy with label smoothing (math in lib/ops/cross_entropy.h).
// Forward: one warp per row (V <= 1024) or one block per row (vocabulary rows) makes one online
// pass over the logits for (max, sum exp, sum x) and reads the target logit once; it writes loss and
// lse (f32). Backward: a flat element-wise kernel over [N, V] with 16-byte packs that reads the
// logits once and adds dloss*(softmax - q) into dlogits. Nothing of size [N, V] is materialised.
// Out-of-range targets give a NaN loss and no gradient. Covered by tests/gpu/cross_entropy_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/cross_entropy.h"
#include "ops/softmax.cuh"

namespace moe::cuda {
namespace {

template <class T, int VEC, bool WARP>
__global__ void cross_entropy_forward_kernel(const T* __restrict__ x, const int32_t* __restrict__ targets,
                                             float* __restrict__ loss, float* __restrict__ lse, long long rows, int V,
                                             float eps, float eps_i, int ignore) {
  __shared__ float scratch[32];
  const int lane = WARP ? threadIdx.x & 31 : threadIdx.x, gsize = WARP ? 32 : blockDim.x;
  const long long first = WARP ? blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5) : blockIdx.x;
  const long long stride = WARP ? (long long)gridDim.x * (blockDim.x >> 5) : gridDim.x;
  for (long long r = first; r < rows; r += stride) {
    const int t = targets[r];  // uniform over the group, so the branches below are too
    if (t == ignore || t < 0 || t >= V) {
      if (lane == 0) {
        loss[r] = t == ignore ? 0.f : NAN;
        lse[r] = t == ignore ? 0.f : NAN;
      }
      continue;
    }
    const T* xr = x + r * V;
    float m = -INFINITY, s = 0.f, sx = 0.f;
    for (int i = lane * VEC; i < V; i += gsize * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float v = to_float(p.v[k]);
        online_add(m, s, v);
        sx += v;
      }
    }
    group_online<WARP>(m, s, scratch);
    sx = group_sum<WARP>(sx, scratch);
    if (lane == 0) {
      const float l = m + logf(s);
      lse[r] = l;
      loss[r] = (1.f - eps - eps_i) * (l - to_float(xr[t])) + eps_i * (static_cast<float>(V) * l - sx);
    }
  }
}

// One thread per pack of VEC logits (packs never cross rows: V % VEC == 0).
template <class T, int VEC>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ x, const int32_t* __restrict__ targets,
                                              const float* __restrict__ lse, const float* __restrict__ dloss,
                                              T* __restrict__ dx, long long packs, int V, float eps, float eps_i,
                                              int ignore) {
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < packs;
       p += (long long)gridDim.x * blockDim.x) {
    const long long i = p * VEC, r = i / V;
    const int t = targets[r];
    if (t == ignore || t < 0 || t >= V) continue;
    const int j0 = static_cast<int>(i - r * V);
    const float l = lse[r], d = dloss[r];
    const Pack<T, VEC> in = load_pack<T, VEC>(x + i);
    Pack<T, VEC> o = load_pack<T, VEC>(dx + i);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float q = eps_i + (j0 + k == t ? 1.f - eps - eps_i : 0.f);
      o.v[k] = from_float<T>(to_float(o.v[k]) + d * (expf(to_float(in.v[k]) - l) - q));
    }
    store_pack<T, VEC>(dx + i, o);
  }
}

float smoothing_per_class(float eps, long long V) { return V > 1 ? eps / static_cast<float>(V - 1) : 0.f; }

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing, int ignore_index) {
  const long long V = logits.shape().last(), rows = targets.numel();
  MOE_CHECK(V < (1LL << 31), "cross_entropy: rows of ", V, " logits are too long for the CUDA kernel");
  const float eps_i = smoothing_per_class(label_smoothing, V);
  const int v = static_cast<int>(V);
  const int32_t* pt = static_cast<const int32_t*>(targets.raw());
  float *pl = static_cast<float*>(loss.raw()), *plse = static_cast<float*>(lse.raw());
  cudaStream_t st = stream(logits.device());
  const bool warp = V <= 1024;
  const unsigned blocks =
      warp ? grid_for(rows * 32, 256) : static_cast<unsigned>(rows < (1LL << 20) ? rows : 1LL << 20);
  const unsigned threads = warp ? 256 : (V >= 8192 ? 512 : 256);
  MOE_FLOAT_SWITCH(logits.dtype(), "cross_entropy", T, {
    const T* px = static_cast<const T*>(logits.raw());
    constexpr int N = 16 / sizeof(T);
    const bool vec = pack_width<T>(V, {px}) == N;
    if (warp && vec)
      cross_entropy_forward_kernel<T, N, true>
          <<<blocks, threads, 0, st>>>(px, pt, pl, plse, rows, v, label_smoothing, eps_i, ignore_index);
    else if (warp)
      cross_entropy_forward_kernel<T, 1, true>
          <<<blocks, threads, 0, st>>>(px, pt, pl, plse, rows, v, label_smoothing, eps_i, ignore_index);
    else if (vec)
      cross_entropy_forward_kernel<T, N, false>
          <<<blocks, threads, 0, st>>>(px, pt, pl, plse, rows, v, label_smoothing, eps_i, ignore_index);
    else
      cross_entropy_forward_kernel<T, 1, false>
          <<<blocks, threads, 0, st>>>(px, pt, pl, plse, rows, v, label_smoothing, eps_i, ignore_index);
  });
  MOE_KERNEL_CHECK();
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing, int ignore_index) {
  const long long V = logits.shape().last(), n = logits.numel();
  MOE_CHECK(V < (1LL << 31), "cross_entropy backward: rows of ", V, " logits are too long for the CUDA kernel");
  const float eps_i = smoothing_per_class(label_smoothing, V);
  const int v = static_cast<int>(V);
  const int32_t* pt = static_cast<const int32_t*>(targets.raw());
  const float *plse = static_cast<const float*>(lse.raw()), *pd = static_cast<const float*>(dloss.raw());
  cudaStream_t st = stream(logits.device());
  MOE_FLOAT_SWITCH(logits.dtype(), "cross_entropy backward", T, {
    const T* px = static_cast<const T*>(logits.raw());
    T* pdx = static_cast<T*>(dlogits.raw());
    constexpr int N = 16 / sizeof(T);
    if (pack_width<T>(V, {px, pdx}) == N)
      cross_entropy_backward_kernel<T, N>
          <<<grid_for(n / N), 256, 0, st>>>(px, pt, plse, pd, pdx, n / N, v, label_smoothing, eps_i, ignore_index);
    else
      cross_entropy_backward_kernel<T, 1>
          <<<grid_for(n), 256, 0, st>>>(px, pt, plse, pd, pdx, n, v, label_smoothing, eps_i, ignore_index);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
