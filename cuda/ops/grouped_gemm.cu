// CUDA grouped GEMM for MoE dispatch: ONE kernel launch per product, offsets read on the device
// (no host sync). Two modes share every kernel (grouped_gemm.cuh):
//   rows mode   (forward, dx): out[rows of e] (+)= A[rows of e] @ B_e; each block finds its
//               (expert, row tile) by scanning the offsets (grid = ceil(N/BM) + E row tiles, spare
//               blocks exit);
//   reduce mode (dw): dw[e] += A_e^T-style product whose reduction runs over the rows of e
//               (grid.z = expert).
// Operands are addressed by element strides A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn],
// staged through shared memory with 16-byte loads where layout allows. The kernel variant table
// (ops/kernel_variants.h) picks the kernel: bf16/f16 on sm_80+ the mma.sync kernel (grouped_gemm_mma.cu)
// or this file's wmma one (128x128x32 tiles, 8 warps of 64x32, f32 accumulation); f32 the 64x64x16 FMA
// tiles (4x4 per thread). Here shared-memory tiles are double-buffered; contiguous 16-byte vectors are
// copied with cp.async (CUDA's pipeline primitives, which the emulator implements too). Every kernel's
// store applies the epilogue act(alpha v + bias[e]) (grouped_gemm.cuh). The epilogue's gradient is one
// segment-sum launch (grouped_epilogue_grad_kernel): dz = dout (out > 0) with relu, and dbias[e] += the
// column sums of dz over e's rows, each block summing 32 columns of one expert (offsets read on the device).
// Covered by tests/gpu/grouped_gemm_parity_test.cpp.
#include <cuda_pipeline.h>
#include <mma.h>

#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/grouped_gemm.cuh"
#include "ops/grouped_gemm.h"
#include "ops/kernel_variants.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
using namespace grouped;
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
        if (gm < t.m_end && gn < g.n) store_out(g, C, t.e, gm, gn, st[idx]);
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
  // The epilogue with the bias of this thread's 4 columns loaded once (not per output: fewer registers).
  float bias[4] = {};
  if (g.bias)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long gn = n0 + tx + 16 * j;
      if (gn < g.n) bias[j] = static_cast<const float*>(g.bias)[t.e * g.n + gn];
    }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long gm = t.m0 + ty + 16 * i, gn = n0 + tx + 16 * j;
      if (gm < t.m_end && gn < g.n) {
        const float v = acc[i][j] * g.alpha + bias[j];
        store_raw(g, C, gm, gn, g.relu ? fmaxf(v, 0.f) : v);
      }
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
  MOE_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
            "grouped_gemm: the CUDA kernels support f32, bf16 and f16, not ", dtype_name(dtype));
  const bool wide = dtype != DType::f32;  // tensor-core tiles 128x128, FMA tiles 64x64
  const long long bm = wide ? 128 : 64, bn = wide ? 128 : 64;
  g.a_mode = vec_mode(g.a, g.sam, g.sak, g.reduce_mode ? g.m_fixed : -1, g.reduce_mode ? -1 : g.k_fixed, 0, elem);
  g.b_mode = vec_mode(g.b, g.sbk, g.sbn, g.reduce_mode ? -1 : g.k_fixed, g.n, g.b_expert_stride, elem);
  const long long gx = g.reduce_mode ? (g.m_fixed + bm - 1) / bm : (g.rows + bm - 1) / bm + g.experts;
  const long long gy = (g.n + bn - 1) / bn;
  MOE_CHECK(gx < (1LL << 31) && gy < 65536, "grouped_gemm: problem too large for one launch (", gx, " x ", gy,
            " tiles)");
  const dim3 grid(unsigned(gx), unsigned(gy), g.reduce_mode ? unsigned(g.experts) : 1u);
  const int device = offsets.device().index;
  cudaStream_t s = stream(device);
  const KernelVariant& v =
      choose_kernel(KernelOp::grouped_gemm, dtype, compute_capability(device), KernelShape{wgmma_fits(g)});
  if (v.impl == KernelImpl::mma) return launch_mma(g, dtype, grid, s, device);
  if (v.impl == KernelImpl::wgmma) return launch_wgmma(g, dtype, (long long)grid.x * grid.y * grid.z, s, device);
  if (v.impl == KernelImpl::simt) grouped_fma_kernel<<<grid, kThreads, 0, s>>>(g);
  else if (dtype == DType::bf16) grouped_wmma_kernel<__nv_bfloat16><<<grid, kThreads, 0, s>>>(g);
  else grouped_wmma_kernel<__half><<<grid, kThreads, 0, s>>>(g);
  MOE_KERNEL_CHECK();
}

GroupArgs base_args(const Tensor& offsets, int experts, long long rows) {
  MOE_CHECK(experts <= kMaxExperts, "grouped_gemm: the CUDA kernel supports at most ", kMaxExperts, " experts, got ",
            experts);
  GroupArgs g{};
  g.offsets = offsets.data<int32_t>();
  g.experts = experts;
  g.rows = rows;
  g.alpha = 1.f;
  return g;
}

// dz = dout (out > 0) when dz is given; dbias[e][j] += sum of dz (or dout) over expert e's rows, when given.
// Block (32, 8): 32 columns, 8 row lanes; grid (column blocks, experts).
template <class T>
__global__ void __launch_bounds__(256) grouped_epilogue_grad_kernel(const T* out, const T* dout, const int32_t* offsets,
                                                                    long long rows, long long m, T* dz, T* dbias) {
  __shared__ float part[8][33];
  const int e = blockIdx.y;
  const long long j = (long long)blockIdx.x * 32 + threadIdx.x;
  const long long r0 = max(0LL, (long long)offsets[e]), r1 = min(rows, (long long)offsets[e + 1]);
  float s = 0.f;
  if (j < m)
    for (long long r = r0 + threadIdx.y; r < r1; r += 8) {
      float v = to_float(dout[r * m + j]);
      if (dz) {
        v = to_float(out[r * m + j]) > 0.f ? v : 0.f;
        dz[r * m + j] = from_float<T>(v);
      }
      s += v;
    }
  if (!dbias) return;  // uniform over the block
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < m) {
    float t = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) t += part[i][threadIdx.x];
    dbias[e * m + j] = from_float<T>(to_float(dbias[e * m + j]) + t);
  }
}

template <class T>
void launch_epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, bool relu, Tensor& dz,
                          Tensor& dbias, long long experts) {
  const long long rows = dout.shape()[0], m = dout.shape()[1];
  const dim3 grid(unsigned((m + 31) / 32), unsigned(experts));
  grouped_epilogue_grad_kernel<T><<<grid, dim3(32, 8), 0, stream(dout.device().index)>>>(
      relu ? static_cast<const T*>(out.raw()) : nullptr, static_cast<const T*>(dout.raw()), offsets.data<int32_t>(),
      rows, m, relu ? static_cast<T*>(dz.raw()) : nullptr, dbias.defined() ? static_cast<T*>(dbias.raw()) : nullptr);
  MOE_KERNEL_CHECK();
}
}  // namespace

void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate, float alpha, const Tensor& bias, GroupedActivation act) {
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
  g.alpha = alpha;
  g.bias = bias.defined() ? bias.raw() : nullptr;
  g.relu = act == GroupedActivation::relu;
  launch(g, x.dtype(), offsets, int(dtype_size(x.dtype())));
}

void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w,
                              float alpha) {
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
  g.alpha = alpha;
  launch(g, x.dtype(), offsets, int(dtype_size(x.dtype())));
}

void grouped_gemm_epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                Tensor& dz, Tensor& dbias) {
  const long long experts = offsets.shape()[0] - 1;
  if (dout.shape().numel() == 0 || experts == 0) return;
  MOE_CHECK(experts < 65536, "grouped_gemm epilogue backward: at most 65535 experts, got ", experts);
  const bool relu = act == GroupedActivation::relu;
  switch (dout.dtype()) {
    case DType::f32:
      return launch_epilogue_grad<float>(out, dout, offsets, relu, dz, dbias, experts);
    case DType::bf16:
      return launch_epilogue_grad<__nv_bfloat16>(out, dout, offsets, relu, dz, dbias, experts);
    case DType::f16:
      return launch_epilogue_grad<__half>(out, dout, offsets, relu, dz, dbias, experts);
    default:
      MOE_FAIL("grouped_gemm: the CUDA kernels support f32, bf16 and f16, not ", dtype_name(dout.dtype()));
  }
}

}  // namespace moe::cuda
