// CUDA top-k along the last axis (ordering as in lib/ops/topk.h). Each element becomes a 64-bit
// key (order-preserving bits of its f32 value << 32 | (0xffffffff - index)), so "larger key" is
// exactly "larger value, then lower index" and a max-reduction is an arg-max. Each thread keeps
// its K best keys in registers (K = k rounded up to 1,2,4,8,16,32); then k rounds of a warp/block
// max pick the winners. A warp per row for n <= 1024 (expert routing); beyond, a block per row,
// or when rows are few (beam search over vocabulary), two stages: (part, row) blocks write their
// k best keys, then a block per row merges them. k > 32 uses k stateless max passes.
// Parity: tests/gpu/topk_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/topk.h"

namespace moe::cuda {
namespace {
using Key = unsigned long long;

template <class T>
__device__ __forceinline__ Key make_key(T x, long long i) {
  float f = to_float(x) + 0.0f;                  // -0 -> +0
  if (isnan(f)) f = __int_as_float(0x7fc00000);  // one positive NaN, above +inf
  unsigned u = __float_as_uint(f);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<Key>(u) << 32) | static_cast<Key>(0xffffffffu - static_cast<unsigned>(i));
}
__device__ __forceinline__ int key_index(Key k) { return static_cast<int>(0xffffffffu - static_cast<unsigned>(k)); }

__device__ __forceinline__ Key warp_max_key(Key v) {
  for (int o = 16; o > 0; o >>= 1) {
    const Key w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/// Max over the group (a warp, or the whole block when kBlock); `scratch` holds 32 keys.
template <bool kBlock>
__device__ __forceinline__ Key group_max(Key v, Key* scratch) {
  v = warp_max_key(v);
  if constexpr (kBlock) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = warp_max_key(lane < warps ? scratch[lane] : 0ull);
  }
  return v;
}

template <int K>
__device__ __forceinline__ void insert_key(Key (&top)[K], Key key) {
  if (key <= top[K - 1]) return;
#pragma unroll
  for (int j = 0; j < K; ++j) {  // keep top[] sorted descending
    const Key hi = top[j] > key ? top[j] : key, lo = top[j] > key ? key : top[j];
    top[j] = hi;
    key = lo;
  }
}

/// k rounds of a group arg-max over the threads' lists; emit(j, key) runs on the (one) winner.
/// Keys are unique except the empty sentinel 0, which only wins when every list is empty.
template <int K, bool kBlock, class Emit>
__device__ __forceinline__ void select_keys(Key (&top)[K], int k, Key* scratch, Emit emit) {
  for (int j = 0; j < k; ++j) {
    const Key best = group_max<kBlock>(top[0], scratch);
    if (top[0] == best) {
#pragma unroll
      for (int q = 0; q + 1 < K; ++q) top[q] = top[q + 1];
      top[K - 1] = 0ull;
      emit(j, best);
    }
  }
}

/// Rows handled by a block: one per warp (kBlock = false) or one per block.
template <class T, int K, bool kBlock>
__global__ void topk_kernel(const T* __restrict__ x, T* __restrict__ values, int* __restrict__ indices, long long rows,
                            int n, int k) {
  __shared__ Key scratch[32];
  const int lane = kBlock ? threadIdx.x : (threadIdx.x & 31);
  const int threads = kBlock ? blockDim.x : 32;
  const long long row = kBlock ? blockIdx.x : blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps only (warp mode); block mode has row < rows always
  const T* xr = x + row * n;
  Key top[K];
#pragma unroll
  for (int j = 0; j < K; ++j) top[j] = 0ull;  // every real key is >= 1
  for (int i = lane; i < n; i += threads) insert_key(top, make_key(xr[i], i));
  select_keys<K, kBlock>(top, k, scratch, [&](int j, Key best) {
    const int i = key_index(best);
    values[row * k + j] = xr[i];
    indices[row * k + j] = i;
  });
}

/// Two-stage path, stage 1: block (part, row) writes the k best keys of x[row, part*slice ..
/// (part+1)*slice) to cand[row, part, :] (0 = none, for a slice shorter than k).
template <class T, int K>
__global__ void topk_partial_kernel(const T* __restrict__ x, int n, int k, int slice, Key* __restrict__ cand) {
  __shared__ Key scratch[32];
  const long long row = blockIdx.y;
  const int part = blockIdx.x, begin = part * slice, end = min(n, begin + slice);
  const T* xr = x + row * n;
  Key top[K];
#pragma unroll
  for (int j = 0; j < K; ++j) top[j] = 0ull;
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) insert_key(top, make_key(xr[i], i));
  Key* out = cand + (row * gridDim.x + part) * k;
  select_keys<K, true>(top, k, scratch, [&](int j, Key best) { out[j] = best; });
}

/// Stage 2: block per row merges its parts * k candidate keys.
template <class T, int K>
__global__ void topk_merge_kernel(const T* __restrict__ x, int n, int k, int candidates, const Key* __restrict__ cand,
                                  T* __restrict__ values, int* __restrict__ indices) {
  __shared__ Key scratch[32];
  const long long row = blockIdx.x;
  const Key* cr = cand + row * candidates;
  Key top[K];
#pragma unroll
  for (int j = 0; j < K; ++j) top[j] = 0ull;
  for (int i = threadIdx.x; i < candidates; i += blockDim.x) insert_key(top, cr[i]);
  select_keys<K, true>(top, k, scratch, [&](int j, Key best) {
    const int i = key_index(best);
    values[row * k + j] = x[row * n + i];
    indices[row * k + j] = i;
  });
}

/// k > 32: k passes, each taking the largest key below the previous winner (a block per row).
template <class T>
__global__ void topk_large_kernel(const T* __restrict__ x, T* __restrict__ values, int* __restrict__ indices, int n,
                                  int k) {
  __shared__ Key scratch[32];
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  Key prev = ~0ull;
  for (int j = 0; j < k; ++j) {
    Key best = 0ull;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const Key key = make_key(xr[i], i);
      if (key < prev && key > best) best = key;
    }
    best = group_max<true>(best, scratch);
    if (threadIdx.x == 0) {
      const int i = key_index(best);
      values[row * k + j] = xr[i];
      indices[row * k + j] = i;
    }
    prev = best;
  }
}

/// Blocks of the two-stage path for long rows: enough (part, row) blocks to fill the GPU
/// (~2 per SM), slices of at least 2048 elements; 1 = use one block per row instead.
int parts_for(long long rows, int n) {
  const long long want = (264 + rows - 1) / rows, most = (n + 2047) / 2048;
  return static_cast<int>(std::max(1LL, std::min(want, most)));
}

template <class T, int K>
void launch(const T* x, T* v, int* idx, long long rows, int n, int k, Device device) {
  cudaStream_t s = stream(device);
  constexpr int kThreads = K >= 32 ? 256 : 512;  // K = 32 needs ~140 registers per thread
  if (n <= 1024) {
    constexpr int kWarps = 4;
    topk_kernel<T, K, false>
        <<<static_cast<unsigned>((rows + kWarps - 1) / kWarps), 32 * kWarps, 0, s>>>(x, v, idx, rows, n, k);
    return;
  }
  const int parts = rows <= 65535 ? parts_for(rows, n) : 1;
  if (parts == 1) {
    topk_kernel<T, K, true><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, v, idx, rows, n, k);
    return;
  }
  const int slice = (n + parts - 1) / parts;
  Tensor cand = Tensor::empty(Shape{rows, parts, k}, DType::i64, device);  // 64-bit keys
  Key* pc = static_cast<Key*>(cand.raw());
  topk_partial_kernel<T, K><<<dim3(parts, static_cast<unsigned>(rows)), 256, 0, s>>>(x, n, k, slice, pc);
  MOE_KERNEL_CHECK();
  topk_merge_kernel<T, K><<<static_cast<unsigned>(rows), 256, 0, s>>>(x, n, k, parts * k, pc, v, idx);
}

template <class T>
__global__ void topk_backward_kernel(const int* __restrict__ indices, const T* __restrict__ dv, T* __restrict__ dx,
                                     long long total, int k, int n) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long row = e / k;
    const int i = indices[e];
    if (i < 0 || i >= n) continue;  // cannot come from topk_forward
    T& d = dx[row * n + i];
    d = from_float<T>(to_float(d) + to_float(dv[e]));
  }
}
}  // namespace

void topk_forward(const Tensor& x, Tensor& values, Tensor& indices) {
  const int n = static_cast<int>(x.shape().last()), k = static_cast<int>(values.shape().last());
  const long long rows = x.numel() / n;
  cudaStream_t s = stream(x.device());
  const Device d = x.device();
  MOE_FLOAT_SWITCH(x.dtype(), "topk", T, {
    const T* px = static_cast<const T*>(x.raw());
    T* pv = static_cast<T*>(values.raw());
    int* pi = static_cast<int*>(indices.raw());
    if (k <= 1)
      launch<T, 1>(px, pv, pi, rows, n, k, d);
    else if (k <= 2)
      launch<T, 2>(px, pv, pi, rows, n, k, d);
    else if (k <= 4)
      launch<T, 4>(px, pv, pi, rows, n, k, d);
    else if (k <= 8)
      launch<T, 8>(px, pv, pi, rows, n, k, d);
    else if (k <= 16)
      launch<T, 16>(px, pv, pi, rows, n, k, d);
    else if (k <= 32)
      launch<T, 32>(px, pv, pi, rows, n, k, d);
    else
      topk_large_kernel<T><<<static_cast<unsigned>(rows), 512, 0, s>>>(px, pv, pi, n, k);
  });
  MOE_KERNEL_CHECK();
}

void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx) {
  const long long total = dvalues.numel();
  const int k = static_cast<int>(dvalues.shape().last()), n = static_cast<int>(dx.shape().last());
  MOE_FLOAT_SWITCH(dx.dtype(), "topk backward", T, {
    topk_backward_kernel<T><<<grid_for(total), 256, 0, stream(dx.device())>>>(static_cast<const int*>(indices.raw()),
                                                                              static_cast<const T*>(dvalues.raw()),
                                                                              static_cast<T*>(dx.raw()), total, k, n);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
