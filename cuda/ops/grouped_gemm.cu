// CUDA grouped GEMM for MoE dispatch: ONE kernel launch per product, offsets read on the device
// (no host sync). Two modes share one tiled kernel:
//   rows mode   (forward, dx): out[rows of e] (+)= A[rows of e] @ B_e; each block finds its
//               (expert, row tile) by scanning the offsets (grid = ceil(N/BM) + E row tiles, spare
//               blocks exit);
//   reduce mode (dw): dw[e] += A_e^T-style product whose reduction runs over the rows of e
//               (grid.z = expert).
// Operands are addressed by element strides A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn],
// staged through shared memory with 16-byte loads where layout allows. bf16/f16: wmma tensor cores
// (128x128x32 tiles, 8 warps of 64x32), f32 accumulation; f32: 64x64x16 FMA tiles (4x4 per thread).
// Shared-memory tiles are double-buffered; contiguous 16-byte vectors are copied with cp.async
// (CUDA's pipeline primitives, which the emulator implements too).
// Covered by tests/gpu/grouped_gemm_parity_test.cpp.
#include <cuda_pipeline.h>
#include <mma.h>

#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/grouped_gemm.h"

namespace moe::cuda {
namespace {
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

/// tile[r * P + c] = src[(r0 + r) * sr + (c0 + c) * sc] inside [r_end, c_end), else 0. Mode 1 copies
/// asynchronously (cp.async through CUDA's pipeline primitives): the caller commits (__pipeline_commit)
/// and waits (__pipeline_wait_prior).
template <class T, int R, int C, int P>
__device__ __forceinline__ void load_tile(T* tile, const T* src, long long r0, long long r_end, long long c0,
                                          long long c_end, long long sr, long long sc, int mode) {
  constexpr int V = 16 / sizeof(T);
  const T zero = from_float<T>(0.f);
  if (mode == 1) {
    constexpr int CV = C / V;
    for (int v = threadIdx.x; v < R * CV; v += kThreads) {
      const int r = v / CV, c = (v % CV) * V;
      const bool in = r0 + r < r_end && c0 + c < c_end;
      // Asynchronous 16-byte copy (cp.async.cg); a zero fill of 16 bytes reads nothing (out-of-range vectors).
      __pipeline_memcpy_async(tile + r * P + c, in ? src + (r0 + r) * sr + c0 + c : src, 16, in ? 0 : 16);
    }
  } else if (mode == 2) {
    constexpr int RV = R / V;
    for (int v = threadIdx.x; v < RV * C; v += kThreads) {
      const int r = (v % RV) * V, c = v / RV;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (r0 + r < r_end && c0 + c < c_end) val = *reinterpret_cast<const uint4*>(src + (c0 + c) * sc + r0 + r);
      const T* parts = reinterpret_cast<const T*>(&val);
#pragma unroll
      for (int i = 0; i < V; ++i) tile[(r + i) * P + c] = parts[i];
    }
  } else if (sc == 1) {  // scalar, consecutive threads along columns
    for (int i = threadIdx.x; i < R * C; i += kThreads) {
      const int r = i / C, c = i % C;
      tile[r * P + c] = (r0 + r < r_end && c0 + c < c_end) ? src[(r0 + r) * sr + c0 + c] : zero;
    }
  } else {  // scalar, consecutive threads along rows
    for (int i = threadIdx.x; i < R * C; i += kThreads) {
      const int r = i % R, c = i / R;
      tile[r * P + c] = (r0 + r < r_end && c0 + c < c_end) ? src[(r0 + r) * sr + (c0 + c) * sc] : zero;
    }
  }
}

template <class T>
__device__ __forceinline__ void store_out(const GroupArgs& g, T* c, long long gm, long long gn, float v) {
  T* p = c + gm * g.n + gn;
  if (g.accumulate) v += to_float(*p);
  *p = from_float<T>(v);
}

template <class T>
__device__ __forceinline__ void operands(const GroupArgs& g, const Tile& t, const T*& a, const T*& b, T*& c) {
  a = static_cast<const T*>(g.a);
  b = static_cast<const T*>(g.b) + (g.reduce_mode ? 0 : t.e * g.b_expert_stride);
  c = static_cast<T*>(g.c) + (g.reduce_mode ? t.e * g.c_expert_stride : 0);
}

// bf16 / f16: tensor cores through wmma, f32 accumulators.
template <class T>
__global__ void __launch_bounds__(kThreads) grouped_wmma_kernel(GroupArgs g) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  constexpr int BM = 128, BN = 128, BK = 32, PA = BK + 8, PB = BN + 8;
  constexpr int kA = BM * PA, kB = BK * PB;  // two stages of each; the epilogue reuses the A stages
  static_assert(2 * kA * sizeof(T) >= kThreads / 32 * 256 * sizeof(float), "epilogue staging must fit");
  __shared__ __align__(128) T As[2 * kA];
  __shared__ __align__(128) T Bs[2 * kB];
  Tile t;
  if (!find_tile<BM>(g, t)) return;
  const T *A, *B;
  T* C;
  operands(g, t, A, B, C);
  const long long n0 = (long long)blockIdx.y * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wm = warp / 4, wn = warp % 4;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  // Two-stage pipeline: tile it+1 is copied while tile it is multiplied.
  auto load = [&](long long k, int buf) {
    load_tile<T, BM, BK, PA>(As + buf * kA, A, t.m0, t.m_end, k, t.k_end, g.sam, g.sak, g.a_mode);
    load_tile<T, BK, BN, PB>(Bs + buf * kB, B, k, t.k_end, n0, g.n, g.sbk, g.sbn, g.b_mode);
    __pipeline_commit();
  };
  if (t.k0 < t.k_end) load(t.k0, 0);
  int it = 0;
  for (long long k = t.k0; k < t.k_end; k += BK, ++it) {
    const T* as = As + (it & 1) * kA;
    const T* bs = Bs + (it & 1) * kB;
    if (k + BK < t.k_end) {
      load(k + BK, (it + 1) & 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + kk * PB + wn * 32 + j * 16, PB);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        wmma::load_matrix_sync(fa, as + (wm * 64 + i * 16) * PA + kk, PA);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  // The loop ended with __syncthreads(), so the A stages are free for per-warp 16x16 staging.
  float* st = reinterpret_cast<float*>(As) + warp * 256;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int idx = lane; idx < 256; idx += 32) {
        const long long gm = t.m0 + wm * 64 + i * 16 + idx / 16, gn = n0 + wn * 32 + j * 16 + idx % 16;
        if (gm < t.m_end && gn < g.n) store_out(g, C, gm, gn, st[idx]);
      }
      __syncwarp();
    }
#else
  __trap();  // tensor-core bf16/f16 path needs sm_80+
#endif
}

// f32: full-precision FMA tiles, 4x4 outputs per thread.
__global__ void __launch_bounds__(kThreads) grouped_fma_kernel(GroupArgs g) {
  constexpr int BM = 64, BN = 64, BK = 16, PA = BK + 4, PB = BN + 4;
  constexpr int kA = BM * PA, kB = BK * PB;
  __shared__ __align__(16) float As[2 * kA];
  __shared__ __align__(16) float Bs[2 * kB];
  Tile t;
  if (!find_tile<BM>(g, t)) return;
  const float *A, *B;
  float* C;
  operands(g, t, A, B, C);
  const long long n0 = (long long)blockIdx.y * BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  auto load = [&](long long k, int buf) {
    load_tile<float, BM, BK, PA>(As + buf * kA, A, t.m0, t.m_end, k, t.k_end, g.sam, g.sak, g.a_mode);
    load_tile<float, BK, BN, PB>(Bs + buf * kB, B, k, t.k_end, n0, g.n, g.sbk, g.sbn, g.b_mode);
    __pipeline_commit();
  };
  if (t.k0 < t.k_end) load(t.k0, 0);
  int it = 0;
  for (long long k = t.k0; k < t.k_end; k += BK, ++it) {
    const float* as = As + (it & 1) * kA;
    const float* bs = Bs + (it & 1) * kB;
    if (k + BK < t.k_end) {
      load(k + BK, (it + 1) & 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[(ty + 16 * i) * PA + kk];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[kk * PB + tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long gm = t.m0 + ty + 16 * i, gn = n0 + tx + 16 * j;
      if (gm < t.m_end && gn < g.n) store_out(g, C, gm, gn, acc[i][j]);
    }
}

/// 16-byte vector mode for an operand: 1 along tile columns (sc == 1), 2 along tile rows (sr == 1),
/// when the contiguous extent (`c_fixed` / `r_fixed`, -1 when it depends on the offsets), the other
/// stride, the expert stride and the pointer all keep 16-byte alignment; else 0 (scalar loads).
int vec_mode(const void* p, long long sr, long long sc, long long r_fixed, long long c_fixed, long long expert_stride,
             int elem) {
  const int v = 16 / elem;
  if (reinterpret_cast<uintptr_t>(p) % 16 || expert_stride % v) return 0;
  if (sc == 1 && c_fixed >= 0 && c_fixed % v == 0 && sr % v == 0) return 1;
  if (sr == 1 && r_fixed >= 0 && r_fixed % v == 0 && sc % v == 0) return 2;
  return 0;
}

void launch(GroupArgs g, DType dtype, const Tensor& offsets, int elem) {
  const bool wide = dtype != DType::f32;  // wmma tiles 128x128, FMA tiles 64x64
  const long long bm = wide ? 128 : 64, bn = wide ? 128 : 64;
  g.a_mode = vec_mode(g.a, g.sam, g.sak, g.reduce_mode ? g.m_fixed : -1, g.reduce_mode ? -1 : g.k_fixed, 0, elem);
  g.b_mode = vec_mode(g.b, g.sbk, g.sbn, g.reduce_mode ? -1 : g.k_fixed, g.n, g.b_expert_stride, elem);
  const long long gx = g.reduce_mode ? (g.m_fixed + bm - 1) / bm : (g.rows + bm - 1) / bm + g.experts;
  const long long gy = (g.n + bn - 1) / bn;
  MOE_CHECK(gx < (1LL << 31) && gy < 65536, "grouped_gemm: problem too large for one launch (", gx, " x ", gy,
            " tiles)");
  const dim3 grid(unsigned(gx), unsigned(gy), g.reduce_mode ? unsigned(g.experts) : 1u);
  cudaStream_t s = stream(offsets.device());
  switch (dtype) {
    case DType::f32: grouped_fma_kernel<<<grid, kThreads, 0, s>>>(g); break;
    case DType::bf16: grouped_wmma_kernel<__nv_bfloat16><<<grid, kThreads, 0, s>>>(g); break;
    case DType::f16: grouped_wmma_kernel<__half><<<grid, kThreads, 0, s>>>(g); break;
    default: MOE_FAIL("grouped_gemm: the CUDA kernel supports f32, bf16 and f16, not ", dtype_name(dtype));
  }
  MOE_KERNEL_CHECK();
}

GroupArgs base_args(const Tensor& offsets, int experts, long long rows) {
  MOE_CHECK(experts <= kMaxExperts, "grouped_gemm: the CUDA kernel supports at most ", kMaxExperts, " experts, got ",
            experts);
  GroupArgs g{};
  g.offsets = offsets.data<int32_t>();
  g.experts = experts;
  g.rows = rows;
  return g;
}
}  // namespace

void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate) {
  const long long rows = x.shape()[0], k = x.shape()[1], m = out.shape()[1];
  const int experts = int(w.shape()[0]);
  if (rows == 0 || m == 0 || experts == 0) return;
  GroupArgs g = base_args(offsets, experts, rows);
  g.a = x.raw();
  g.b = w.raw();
  g.c = out.raw();
  g.k_fixed = k;
  g.n = m;
  g.sam = k;
  g.sak = 1;
  g.sbk = trans_w ? 1 : m;  // w_e [K, M], or [M, K] read transposed
  g.sbn = trans_w ? k : 1;
  g.b_expert_stride = k * m;
  g.accumulate = accumulate;
  launch(g, x.dtype(), offsets, int(dtype_size(x.dtype())));
}

void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w) {
  const long long rows = x.shape()[0], k = x.shape()[1], m = dout.shape()[1];
  const int experts = int(dw.shape()[0]);
  if (rows == 0 || m == 0 || k == 0 || experts == 0) return;
  GroupArgs g = base_args(offsets, experts, rows);
  // dw_e [K, M] += x_e^T dout_e, or dw_e [M, K] += dout_e^T x_e with trans_w.
  const Tensor& left = trans_w ? dout : x;
  const Tensor& right = trans_w ? x : dout;
  const long long lc = left.shape()[1], rc = right.shape()[1];
  g.a = left.raw();
  g.b = right.raw();
  g.c = dw.raw();
  g.reduce_mode = true;
  g.m_fixed = lc;
  g.n = rc;
  g.sam = 1;
  g.sak = lc;
  g.sbk = rc;
  g.sbn = 1;
  g.c_expert_stride = lc * rc;
  g.accumulate = true;
  launch(g, x.dtype(), offsets, int(dtype_size(x.dtype())));
}

}  // namespace moe::cuda
