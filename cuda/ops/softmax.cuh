// Device helpers shared by the row-wise kernels (softmax.cu, cross_entropy.cu, layer_norm.cu):
// 16-byte packed loads/stores (Pack<T, N>), an online max/sum-of-exp accumulator
// (m, s) with s = sum exp(x - m), and reductions over a warp or a whole block chosen at compile time.
// Covered through tests/gpu/softmax_parity_test.cpp and tests/gpu/cross_entropy_parity_test.cpp.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "common/cuda_types.cuh"
#include "common/reduce.cuh"

namespace moe::cuda {

/// N consecutive elements moved as one aligned access (16 bytes when N * sizeof(T) == 16).
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class T, int N>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, N>*>(p);
}
template <class T, int N>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& v) {
  *reinterpret_cast<Pack<T, N>*>(p) = v;
}

/// Elements per 16-byte pack for T, or 1 when rows of `cols` elements at `ptrs` are not 16-byte aligned.
template <class T>
inline int pack_width(int64_t cols, std::initializer_list<const void*> ptrs) {
  constexpr int n = 16 / sizeof(T);
  if (cols % n) return 1;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16) return 1;
  return n;
}

/// Adds exp(v) to the running (m, s): s = sum exp(x - m) over the values seen so far.
__device__ __forceinline__ void online_add(float& m, float& s, float v) {
  if (v == -INFINITY) return;
  if (v > m) {
    s = s * __expf(m - v) + 1.f;
    m = v;
  } else {
    s += __expf(v - m);
  }
}

/// Sum / max over the group: a warp (WARP) or the whole block (needs blockDim.x % 32 == 0).
template <bool WARP>
__device__ __forceinline__ float group_sum(float v, float* scratch) {
  if constexpr (WARP)
    return warp_sum(v);
  else
    return block_sum(v, scratch);
}
template <bool WARP>
__device__ __forceinline__ float group_max(float v, float* scratch) {
  if constexpr (WARP)
    return warp_max(v);
  else
    return block_max(v, scratch);
}

/// Combines per-thread (m, s) over the group; returns the group's (m, s), s = 0 when nothing was kept.
template <bool WARP>
__device__ __forceinline__ void group_online(float& m, float& s, float* scratch) {
  const float gm = group_max<WARP>(m, scratch);
  s = group_sum<WARP>(m == -INFINITY ? 0.f : s * __expf(m - gm), scratch);
  m = gm;
}

}  // namespace moe::cuda
