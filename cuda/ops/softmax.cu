// CUDA softmax / log-softmax over the last axis with an optional keep-mask (math in lib/ops/softmax.h).
// One warp per row for rows of <= 1024 elements (forward: the row is read once into registers),
// one block per row above (vocabulary-size rows: one online pass for (max, sum exp), then one pass
// writing y). Backward: one pass for the row sum, then one pass updating dx. 16-byte packed
// loads/stores when rows are aligned; f32 math.
// Covered by tests/gpu/softmax_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/softmax.cuh"
#include "ops/softmax.h"

namespace moe::cuda {
namespace {

// Row r of the launch's rows, its lane within the group, and the group size (WARP: a warp per row).
template <bool WARP>
struct RowGroup {
  int lane, size;
  long long first, stride;
  __device__ RowGroup() {
    if constexpr (WARP) {
      lane = threadIdx.x & 31;
      size = 32;
      first = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5);
      stride = (long long)gridDim.x * (blockDim.x >> 5);
    } else {
      lane = threadIdx.x;
      size = blockDim.x;
      first = blockIdx.x;
      stride = gridDim.x;
    }
  }
};

template <class T, int VEC, bool WARP>
__global__ void softmax_forward_kernel(const T* __restrict__ x, const uint8_t* __restrict__ mask, long long mask_stride,
                                       T* __restrict__ y, long long rows, int cols, bool log_out) {
  __shared__ float scratch[32];
  const RowGroup<WARP> g;
  for (long long r = g.first; r < rows; r += g.stride) {
    const T* xr = x + r * cols;
    const uint8_t* mr = mask ? mask + r * mask_stride : nullptr;
    T* yr = y + r * cols;
    float m = -INFINITY, s = 0.f;
    for (int i = g.lane * VEC; i < cols; i += g.size * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (!mr || mr[i + k]) online_add(m, s, to_float(p.v[k]));
    }
    group_online<WARP>(m, s, scratch);
    const bool empty = s == 0.f;  // fully masked (or all -inf)
    const float inv = empty ? 0.f : 1.f / s, lse = m + logf(s);
    for (int i = g.lane * VEC; i < cols; i += g.size * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float v = to_float(p.v[k]);
        const bool keep = !empty && (!mr || mr[i + k]) && v != -INFINITY;
        o.v[k] = from_float<T>(keep ? (log_out ? v - lse : expf(v - m) * inv) : (log_out ? -INFINITY : 0.f));
      }
      store_pack<T, VEC>(yr + i, o);
    }
  }
}

// Rows of <= 1024 elements: one warp per row with the row held in registers, so x is read once
// (lane l holds packs l, l+32, ...: at most 32 / VEC packs of VEC elements). Masked entries are
// stored as -inf; max, then sum of exp (kept in registers for softmax), then the write.
template <class T, int VEC>
__global__ void softmax_forward_warp_kernel(const T* __restrict__ x, const uint8_t* __restrict__ mask,
                                            long long mask_stride, T* __restrict__ y, long long rows, int cols,
                                            bool log_out) {
  constexpr int kPacks = 32 / VEC;
  const int lane = threadIdx.x & 31;
  const long long stride = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += stride) {
    const T* xr = x + r * cols;
    const uint8_t* mr = mask ? mask + r * mask_stride : nullptr;
    float v[kPacks][VEC];
    float m = -INFINITY;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = (p * 32 + lane) * VEC;
      if (i < cols) {
        const Pack<T, VEC> pk = load_pack<T, VEC>(xr + i);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          v[p][k] = mr && !mr[i + k] ? -INFINITY : to_float(pk.v[k]);
          m = fmaxf(m, v[p][k]);
        }
      }
    }
    m = warp_max(m);
    float s = 0.f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if ((p * 32 + lane) * VEC < cols) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float e = v[p][k] == -INFINITY ? 0.f : expf(v[p][k] - m);
          s += e;
          if (!log_out) v[p][k] = e;
        }
      }
    }
    s = warp_sum(s);
    const bool empty = s == 0.f;  // fully masked (or all -inf)
    const float inv = empty ? 0.f : 1.f / s, lse = m + logf(s);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = (p * 32 + lane) * VEC;
      if (i < cols) {
        Pack<T, VEC> o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float e = v[p][k];
          o.v[k] = from_float<T>(log_out ? (empty || e == -INFINITY ? -INFINITY : e - lse) : e * inv);
        }
        store_pack<T, VEC>(y + r * cols + i, o);
      }
    }
  }
}

template <class T, int VEC, bool WARP>
__global__ void softmax_backward_kernel(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                                        long long rows, int cols, bool log_out) {
  __shared__ float scratch[32];
  const RowGroup<WARP> g;
  for (long long r = g.first; r < rows; r += g.stride) {
    const T *yr = y + r * cols, *dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    float s = 0.f;
    for (int i = g.lane * VEC; i < cols; i += g.size * VEC) {
      const Pack<T, VEC> py = load_pack<T, VEC>(yr + i), pd = load_pack<T, VEC>(dyr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float yv = to_float(py.v[k]), d = to_float(pd.v[k]);
        s += log_out ? (yv == -INFINITY ? 0.f : d) : d * yv;
      }
    }
    s = group_sum<WARP>(s, scratch);
    for (int i = g.lane * VEC; i < cols; i += g.size * VEC) {
      const Pack<T, VEC> py = load_pack<T, VEC>(yr + i), pd = load_pack<T, VEC>(dyr + i);
      Pack<T, VEC> o = load_pack<T, VEC>(dxr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float yv = to_float(py.v[k]), d = to_float(pd.v[k]);
        const float add = log_out ? (yv == -INFINITY ? 0.f : d - expf(yv) * s) : yv * (d - s);
        o.v[k] = from_float<T>(to_float(o.v[k]) + add);
      }
      store_pack<T, VEC>(dxr + i, o);
    }
  }
}

// Launch shape: a warp per row (8 rows per 256-thread block) or a block per row.
struct RowLaunch {
  bool warp;
  unsigned blocks, threads;
};
RowLaunch row_launch(long long rows, int cols) {
  if (cols <= 1024) return {true, grid_for(rows * 32, 256), 256};
  const long long cap = 1LL << 20;
  return {false, static_cast<unsigned>(rows < cap ? rows : cap), cols >= 8192 ? 512u : 256u};
}

}  // namespace

void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  const long long cols = x.shape().last(), rows = x.numel() / cols;
  MOE_CHECK(cols < (1LL << 31), op, ": rows of ", cols, " elements are too long for the CUDA kernel");
  const long long mstride = softmax_mask_stride(op, x, mask);
  const uint8_t* m = mask.defined() ? static_cast<const uint8_t*>(mask.raw()) : nullptr;
  const RowLaunch l = row_launch(rows, static_cast<int>(cols));
  cudaStream_t st = stream(x.device());
  MOE_FLOAT_SWITCH(x.dtype(), op, T, {
    const T* px = static_cast<const T*>(x.raw());
    T* py = static_cast<T*>(y.raw());
    constexpr int V = 16 / sizeof(T);
    const bool vec = pack_width<T>(cols, {px, py}) == V;
    const int c = static_cast<int>(cols);
    if (l.warp && vec)
      softmax_forward_warp_kernel<T, V><<<l.blocks, l.threads, 0, st>>>(px, m, mstride, py, rows, c, log);
    else if (l.warp)
      softmax_forward_warp_kernel<T, 1><<<l.blocks, l.threads, 0, st>>>(px, m, mstride, py, rows, c, log);
    else if (vec)
      softmax_forward_kernel<T, V, false><<<l.blocks, l.threads, 0, st>>>(px, m, mstride, py, rows, c, log);
    else
      softmax_forward_kernel<T, 1, false><<<l.blocks, l.threads, 0, st>>>(px, m, mstride, py, rows, c, log);
  });
  MOE_KERNEL_CHECK();
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  const long long cols = y.shape().last(), rows = y.numel() / cols;
  MOE_CHECK(cols < (1LL << 31), op, ": rows of ", cols, " elements are too long for the CUDA kernel");
  const RowLaunch l = row_launch(rows, static_cast<int>(cols));
  cudaStream_t st = stream(y.device());
  MOE_FLOAT_SWITCH(y.dtype(), op, T, {
    const T *py = static_cast<const T*>(y.raw()), *pdy = static_cast<const T*>(dy.raw());
    T* pdx = static_cast<T*>(dx.raw());
    constexpr int V = 16 / sizeof(T);
    const bool vec = pack_width<T>(cols, {py, pdy, pdx}) == V;
    const int c = static_cast<int>(cols);
    if (l.warp && vec)
      softmax_backward_kernel<T, V, true><<<l.blocks, l.threads, 0, st>>>(py, pdy, pdx, rows, c, log);
    else if (l.warp)
      softmax_backward_kernel<T, 1, true><<<l.blocks, l.threads, 0, st>>>(py, pdy, pdx, rows, c, log);
    else if (vec)
      softmax_backward_kernel<T, V, false><<<l.blocks, l.threads, 0, st>>>(py, pdy, pdx, rows, c, log);
    else
      softmax_backward_kernel<T, 1, false><<<l.blocks, l.threads, 0, st>>>(py, pdy, pdx, rows, c, log);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
