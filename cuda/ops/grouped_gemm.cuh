// The pieces the grouped GEMM's kernels share (grouped_gemm.cu: the FMA and wmma kernels and the
// dispatch; grouped_gemm_mma.cu: the mma.sync kernel): the problem as the kernels see it, each block's
// (expert, row tile) found from the offsets on the device, the operand pointers, the output store and
// the 16-byte vector mode of an operand, and the epilogue every store applies to the f32 accumulator,
// v = act(alpha v + bias[e]) (+ the old value with accumulate). Covered by tests/gpu/grouped_gemm_parity_test.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda_types.cuh"
#include "common/ptx.cuh"
#include "tensor/dtype.h"

namespace moe::cuda::grouped {

constexpr int kThreads = 256;
constexpr int kMaxExperts = 1024;

struct GroupArgs {
  const void* a;
  const void* b;
  void* c;
  const int32_t* offsets;
  int experts;
  long long rows;     // N: total rows (clamps malformed offsets)
  long long m_fixed;  // reduce mode: rows of each C_e
  long long n;        // columns of C
  long long k_fixed;  // rows mode: reduction length
  long long sam, sak, sbk, sbn;
  long long b_expert_stride, c_expert_stride;
  int a_mode, b_mode;  // 0: scalar loads; 1: 16-byte vectors along tile columns; 2: along tile rows
  bool reduce_mode, accumulate;
  bool relu;  // the epilogue: v = act(alpha v + bias[e][n]); bias [E, n] or null (row mode only)
  float alpha;
  const void* bias;
};

struct Tile {
  long long m0, m_end, k0, k_end;
  int e;
};

/// The block's expert and row/reduction ranges; false when the block has no work.
template <int BM>
__device__ bool find_tile(const GroupArgs& g, Tile& t) {
  __shared__ int s_off[kMaxExperts + 1];
  __shared__ int s_e, s_t;
  for (int i = threadIdx.x; i <= g.experts; i += blockDim.x) s_off[i] = g.offsets[i];
  __syncthreads();
  if (g.reduce_mode) {
    t.e = blockIdx.z;
    t.m0 = (long long)blockIdx.x * BM;
    t.m_end = g.m_fixed;
    t.k0 = max(0LL, (long long)s_off[t.e]);
    t.k_end = min(g.rows, (long long)s_off[t.e + 1]);
    return t.m0 < t.m_end;
  }
  if (threadIdx.x == 0) {
    long long tile = blockIdx.x;
    int found = -1;
    for (int i = 0; i < g.experts; ++i) {
      const long long len = (long long)s_off[i + 1] - s_off[i];
      const long long tiles = len > 0 ? (len + BM - 1) / BM : 0;
      if (tile < tiles) { found = i; break; }
      tile -= tiles;
    }
    s_e = found;
    s_t = (int)tile;
  }
  __syncthreads();
  t.e = s_e;
  if (t.e < 0) return false;
  t.m0 = (long long)s_off[t.e] + (long long)s_t * BM;
  t.m_end = min(g.rows, (long long)s_off[t.e + 1]);
  t.k0 = 0;
  t.k_end = g.k_fixed;
  return t.m0 >= 0 && t.m0 < t.m_end;
}

/// The epilogue of expert e's column gn: act(alpha v + bias[e][gn]).
template <class T>
__device__ __forceinline__ float epilogue(const GroupArgs& g, int e, long long gn, float v) {
  v *= g.alpha;
  if (g.bias) v += to_float(static_cast<const T*>(g.bias)[e * g.n + gn]);
  return g.relu ? fmaxf(v, 0.f) : v;
}

/// Stores v (after the epilogue) at (gm, gn), added to the old value with accumulate.
template <class T>
__device__ __forceinline__ void store_raw(const GroupArgs& g, T* c, long long gm, long long gn, float v) {
  T* p = c + gm * g.n + gn;
  if (g.accumulate) v += to_float(*p);
  *p = from_float<T>(v);
}

template <class T>
__device__ __forceinline__ void store_out(const GroupArgs& g, T* c, int e, long long gm, long long gn, float v) {
  store_raw(g, c, gm, gn, epilogue<T>(g, e, gn, v));
}

template <class T>
__device__ __forceinline__ void operands(const GroupArgs& g, const Tile& t, const T*& a, const T*& b, T*& c) {
  a = static_cast<const T*>(g.a);
  b = static_cast<const T*>(g.b) + (g.reduce_mode ? 0 : t.e * g.b_expert_stride);
  c = static_cast<T*>(g.c) + (g.reduce_mode ? t.e * g.c_expert_stride : 0);
}

/// Columns gn and gn + 1 of row gm: one 4- or 8-byte store where the output's rows keep them aligned.
template <class T>
__device__ __forceinline__ void store_pair(const GroupArgs& g, T* c, int e, long long gm, long long gn, float v0,
                                           float v1) {
  if (gn + 1 < g.n && g.n % 2 == 0) {  // two adjacent, aligned columns: one store
    T* p = c + gm * g.n + gn;
    v0 = epilogue<T>(g, e, gn, v0), v1 = epilogue<T>(g, e, gn + 1, v1);
    if (g.accumulate) v0 += to_float(p[0]), v1 += to_float(p[1]);
    if constexpr (sizeof(T) == 2) {
      const uint32_t bits = ptx::pack2<T>(v0, v1);
      *reinterpret_cast<uint32_t*>(p) = bits;
    } else {
      *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
    }
    return;
  }
  if (gn < g.n) store_out(g, c, e, gm, gn, v0);
  if (gn + 1 < g.n) store_out(g, c, e, gm, gn + 1, v1);
}

/// Launches the mma.sync kernel (grouped_gemm_mma.cu) on the grid the dispatch computed.
void launch_mma(const GroupArgs& g, DType dtype, dim3 grid, cudaStream_t stream, int device);
/// Whether the wgmma kernel (grouped_gemm_wgmma.cu) takes g: every operand moves by TMA (16-byte aligned,
/// 16-byte strides), A K-major in row mode, both operands MN-major in reduce mode.
bool wgmma_fits(const GroupArgs& g);
/// Launches it on at most max_tiles persistent blocks (one per SM).
void launch_wgmma(const GroupArgs& g, DType dtype, long long max_tiles, cudaStream_t stream, int device);

}  // namespace moe::cuda::grouped
