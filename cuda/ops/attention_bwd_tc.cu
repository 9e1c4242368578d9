// Tensor-core attention backward for bf16/f16 storage (wmma m16n16k16, f32 accumulation), the same
// schedule as attention_bwd.cu: a block owns one key tile of one key head, keeps dK and dV as wmma
// accumulator fragments in registers across all query heads of the group and all query tiles, and
// per query tile computes S = Q K^T and dP = dO V^T (tensor cores, into shared f32), then
// p = 2^(s2 - lse2), wzP and dS = scale p (w z dP - delta) (rounded to the storage type; z = keep(), the
// dropout factor of the forward, 1 without attention dropout),
// dV += (wP)^T dO, dK += dS^T Q, dQ_tile = dS K (f32 atomics into the workspace), dw += sum_j p dP.
// Covered by the bf16 cases of tests/gpu/attention_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "attention_common.cuh"
#include "common/context.h"
#include "common/cuda_check.h"

namespace moe::cuda {
namespace {
using namespace attn;
using namespace nvcuda;

template <int DP>
struct TcBwdTile {
  static constexpr int BQ = DP >= 256 ? 32 : 64, BK = BQ;  // BQ >= BK: the dQ buffer stages dK/dV at the end
  static constexpr int LT = DP + 8, LP = BK + 8, LS = BK + 4, LO = DP + 4;
  static constexpr int kWarps = kThreads / 32, kTiles = (BK / 16) * (DP / 16) / kWarps;  // dK/dV tiles per warp
  static constexpr size_t bytes_t = 2 * (2 * size_t(BK) * LT + 2 * size_t(BQ) * LT + 2 * size_t(BQ) * LP);
  static constexpr size_t smem = bytes_t + 4 * (2 * size_t(BQ) * LS + size_t(BQ) * LO + 3 * BQ);
  static_assert(kTiles >= 1 && (BK / 16) * (DP / 16) % kWarps == 0, "dK/dV tiles must split over the warps");
};

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// C (f32, row-major, ldc) = A B^T for (M/16) x (N/16) tiles over the warps; A [M][.], B [N][.] row-major.
template <class T, int M, int N, int K>
__device__ __forceinline__ void gemm_nt(float* C, int ldc, const T* A, int lda, const T* B, int ldb) {
  for (int t = threadIdx.x / 32; t < (M / 16) * (N / 16); t += kThreads / 32) {
    const int tm = t / (N / 16), tn = t % (N / 16);
    Acc acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
      wmma::load_matrix_sync(fa, A + tm * 16 * lda + kk * 16, lda);
      wmma::load_matrix_sync(fb, B + tn * 16 * ldb + kk * 16, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(C + tm * 16 * ldc + tn * 16, acc, ldc, wmma::mem_row_major);
  }
}

/// dst[b, k0 + r, hk, d] += the warp-owned accumulator tiles (staged row-major through `stage`).
template <class T, int DP>
__device__ __forceinline__ void stage_add(Acc (&acc)[TcBwdTile<DP>::kTiles], T* dst, float* stage, const Params& p,
                                          int b, int k0, int hk) {
  using C = TcBwdTile<DP>;
  constexpr int LO = C::LO, BK = C::BK;
  const int warp = threadIdx.x / 32;
  __syncthreads();  // the stage buffer is no longer read
#pragma unroll
  for (int n = 0; n < C::kTiles; ++n) {
    const int t = warp + n * C::kWarps, tm = t / (DP / 16), tn = t % (DP / 16);
    wmma::store_matrix_sync(stage + tm * 16 * LO + tn * 16, acc[n], LO, wmma::mem_row_major);
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < BK * DP; idx += kThreads) {
    const int r = idx / DP, d = idx % DP, j = k0 + r;
    if (j >= p.Tk || d >= p.D) continue;
    const long long g = (((long long)b * p.Tk + j) * p.Hk + hk) * p.D + d;
    dst[g] = from_float<T>(to_float(dst[g]) + stage[r * LO + d]);
  }
}

template <class T, int DP>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_tc_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                            const T* __restrict__ w, const T* __restrict__ dout, const float* __restrict__ lse,
                            const float* __restrict__ delta, float* __restrict__ dq_acc, float* __restrict__ dw_acc,
                            T* __restrict__ dk, T* __restrict__ dv) {
  using C = TcBwdTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LT = C::LT, LP = C::LP, LS = C::LS, LO = C::LO, NT = C::kTiles;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T *sV = sK + BK * LT, *sQ = sV + BK * LT, *sO = sQ + BQ * LT, *sP = sO + BQ * LT, *sDS = sP + BQ * LP;
  float* sS = reinterpret_cast<float*>(smem_raw + C::bytes_t);
  float *sDP = sS + BQ * LS, *sDQ = sDP + BQ * LS, *sLse = sDQ + BQ * LO, *sDelta = sLse + BQ, *sW = sDelta + BQ;
  const int k0 = blockIdx.x * BK, hk = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x, warp = tid / 32;

  load_raw<T, BK, DP, LT>(sK, k, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
  load_raw<T, BK, DP, LT>(sV, v, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
  Acc dk_acc[NT], dv_acc[NT];
#pragma unroll
  for (int n = 0; n < NT; ++n) wmma::fill_fragment(dk_acc[n], 0.f), wmma::fill_fragment(dv_acc[n], 0.f);

  const int q_begin = p.causal ? max(0, k0 - (p.Tk - p.Tq)) / BQ * BQ : 0;
  for (int h = hk * p.group; h < (hk + 1) * p.group; ++h) {
    for (int q0 = q_begin; q0 < p.Tq; q0 += BQ) {
      __syncthreads();
      load_raw<T, BQ, DP, LT>(sQ, q, b, q0, p.Tq, p.H, h, p.D, p.vec16);
      load_raw<T, BQ, DP, LT>(sO, dout, b, q0, p.Tq, p.H, h, p.D, p.vec16);
      if (tid < BQ) {
        const int i = q0 + tid;
        const bool ok = i < p.Tq;
        const long long row = ((long long)b * p.H + h) * p.Tq + i;
        sLse[tid] = ok ? lse[row] * kLog2e : -INFINITY;
        sDelta[tid] = ok ? delta[row] : 0.f;
        float wt = 1.f;
        if (w) wt = ok ? to_float(w[p.w_per_position ? ((long long)b * p.Tq + i) * p.H + h : (long long)b * p.H + h]) : 0.f;
        sW[tid] = wt;
      }
      __syncthreads();
      gemm_nt<T, BQ, BK, DP>(sS, LS, sQ, LT, sK, LT);
      gemm_nt<T, BQ, BK, DP>(sDP, LS, sO, LT, sV, LT);
      __syncthreads();
      {  // element-wise: TPR threads per query row
        constexpr int TPR = kThreads / BQ;
        const int r = tid / TPR, lane = tid % TPR, i = q0 + r;
        const float lse2 = sLse[r], wt = sW[r], dl = sDelta[r];
        float dw = 0.f;
        for (int j = lane; j < BK; j += TPR) {
          const bool vis = lse2 != -INFINITY && visible(p, b, i, k0 + j);
          const float pij = vis ? exp2f(sS[r * LS + j] * p.scale_log2 - lse2) : 0.f;
          const float z = vis ? keep(p, b, h, i, k0 + j) : 0.f;  // the forward's dropout factor
          const float dpu = sDP[r * LS + j];
          sP[r * LP + j] = from_float<T>(pij * z * wt);
          sDS[r * LP + j] = from_float<T>(pij * (wt * z * dpu - dl) * p.scale);
          dw += pij * z * dpu;
        }
        if (dw_acc) {
#pragma unroll
          for (int off = TPR / 2; off > 0; off >>= 1) dw += __shfl_xor_sync(0xffffffffu, dw, off, TPR);
          if (lane == 0 && i < p.Tq) atomicAdd(&dw_acc[((long long)b * p.Tq + i) * p.H + h], dw);
        }
      }
      __syncthreads();
      // dV += (wP)^T dO and dK += dS^T Q on this warp's tiles (A = P^T: col-major view of sP).
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const int t = warp + n * C::kWarps, tm = t / (DP / 16), tn = t % (DP / 16);
#pragma unroll
        for (int kk = 0; kk < BQ / 16; ++kk) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
          wmma::load_matrix_sync(fa, sP + kk * 16 * LP + tm * 16, LP);
          wmma::load_matrix_sync(fb, sO + kk * 16 * LT + tn * 16, LT);
          wmma::mma_sync(dv_acc[n], fa, fb, dv_acc[n]);
          wmma::load_matrix_sync(fa, sDS + kk * 16 * LP + tm * 16, LP);
          wmma::load_matrix_sync(fb, sQ + kk * 16 * LT + tn * 16, LT);
          wmma::mma_sync(dk_acc[n], fa, fb, dk_acc[n]);
        }
      }
      if (dq_acc) {  // dQ tile = dS K, staged in shared memory, then f32 atomics (coalesced over d)
        for (int t = warp; t < (BQ / 16) * (DP / 16); t += C::kWarps) {
          const int tm = t / (DP / 16), tn = t % (DP / 16);
          Acc acc;
          wmma::fill_fragment(acc, 0.f);
#pragma unroll
          for (int kk = 0; kk < BK / 16; ++kk) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
            wmma::load_matrix_sync(fa, sDS + tm * 16 * LP + kk * 16, LP);
            wmma::load_matrix_sync(fb, sK + kk * 16 * LT + tn * 16, LT);
            wmma::mma_sync(acc, fa, fb, acc);
          }
          wmma::store_matrix_sync(sDQ + tm * 16 * LO + tn * 16, acc, LO, wmma::mem_row_major);
        }
        __syncthreads();
        for (int idx = tid; idx < BQ * DP; idx += kThreads) {
          const int r = idx / DP, d = idx % DP, i = q0 + r;
          if (i < p.Tq && d < p.D) atomicAdd(&dq_acc[(((long long)b * p.Tq + i) * p.H + h) * p.D + d], sDQ[r * LO + d]);
        }
      }
    }
  }
  // dK, dV: stage each through sDQ ([BQ][LO] holds [BK][LO] since BQ >= BK) and add into global memory.
  if (dk) stage_add<T, DP>(dk_acc, dk, sDQ, p, b, k0, hk);
  if (dv) stage_add<T, DP>(dv_acc, dv, sDQ, p, b, k0, hk);
}

template <class T, int DP>
void launch_bwd_tc(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                   const Tensor& dout, const Tensor& lse, const Tensor& delta, Tensor& dq_acc, Tensor& dw_acc,
                   Tensor& dk, Tensor& dv) {
  using C = TcBwdTile<DP>;
  auto kernel = attention_bwd_tc_kernel<T, DP>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::smem)));
  const dim3 grid((p.Tk + C::BK - 1) / C::BK, p.Hk, p.B);
  kernel<<<grid, kThreads, C::smem, s>>>(
      p, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()),
      w.defined() ? static_cast<const T*>(w.raw()) : nullptr, static_cast<const T*>(dout.raw()), lse.data<float>(),
      delta.data<float>(), dq_acc.defined() ? dq_acc.data<float>() : nullptr,
      dw_acc.defined() ? dw_acc.data<float>() : nullptr, dk.defined() ? static_cast<T*>(dk.raw()) : nullptr,
      dv.defined() ? static_cast<T*>(dv.raw()) : nullptr);
  MOE_KERNEL_CHECK();
}

template <class T>
void dispatch_bwd_tc(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                     const Tensor& dout, const Tensor& lse, const Tensor& delta, Tensor& dq_acc, Tensor& dw_acc,
                     Tensor& dk, Tensor& dv) {
  switch (padded_head_size(p.D)) {
    case 32: launch_bwd_tc<T, 32>(p, q, k, v, w, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
    case 64: launch_bwd_tc<T, 64>(p, q, k, v, w, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
    case 128: launch_bwd_tc<T, 128>(p, q, k, v, w, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
    default: launch_bwd_tc<T, 256>(p, q, k, v, w, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
  }
}
}  // namespace

void attention_backward_tc(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                           Tensor& dq_acc, Tensor& dw_acc, Tensor& dk, Tensor& dv) {
  if (q.dtype() == DType::bf16)
    dispatch_bwd_tc<__nv_bfloat16>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv);
  else dispatch_bwd_tc<__half>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv);
}

}  // namespace moe::cuda
