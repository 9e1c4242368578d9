// Tensor-core attention forward for bf16/f16 storage (wmma m16n16k16, f32 accumulation): the same
// FlashAttention-2 schedule as attention_fwd.cu (query tile per block, K/V tiles streamed through
// shared memory, online softmax in base 2), with S = Q K^T and O += P V on tensor cores. S is
// staged in shared memory (f32) for the softmax; O stays in accumulator fragments (registers) and is rescaled
// per row by 2^(m_old - m_new) through a factor fragment of the same layout; P is rounded to the
// storage type for the P V product (times the dropout factor keep(), attention_dropout.h, when training
// with attention dropout; the row sum l stays undropped). Covered by the bf16 cases of
// tests/gpu/attention_parity_test.cpp.
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

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <int DP>
struct TcTile {
  static constexpr int BQ = 64, BK = DP >= 256 ? 32 : 64;
  static constexpr int LT = DP + 8, LP = BK + 8, LS = BK + 4, LO = DP + 4;  // leading dimensions
  static constexpr size_t bytes_t = 2 * (size_t(BQ) * LT + 2 * size_t(BK) * LT + size_t(BQ) * LP);
  static constexpr int kOTiles = (BQ / 16) * (DP / 16) / (kThreads / 32);  // O fragments per warp
  static constexpr size_t smem = bytes_t + 4 * (size_t(BQ) * LS + size_t(BQ) * 16 + size_t(BQ) * LO + 2 * BQ);
  static_assert(kOTiles >= 1 && (BQ / 16) * (DP / 16) % (kThreads / 32) == 0, "O tiles must split over the warps");
};

template <class T, int DP>
__global__ void __launch_bounds__(kThreads)
    attention_fwd_tc_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                            const T* __restrict__ w, T* __restrict__ out, float* __restrict__ lse) {
  using C = TcTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LT = C::LT, LP = C::LP, LS = C::LS, LO = C::LO;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T *sK = sQ + BQ * LT, *sV = sK + BK * LT, *sP = sV + BK * LT;
  float* sS = reinterpret_cast<float*>(smem_raw + C::bytes_t);
  // sR: one 16-wide row of a per-row factor (2^(m_old-m_new), then w/l) per query row: loaded as an
  // accumulator fragment it has the same element layout as the O fragments, so O scales element-wise.
  float *sR = sS + BQ * LS, *sO = sR + BQ * 16, *sM = sO + BQ * LO, *sL = sM + BQ;
  const int q0 = blockIdx.x * BQ, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const int tid = threadIdx.x, warp = tid / 32;

  load_raw<T, BQ, DP, LT>(sQ, q, b, q0, p.Tq, p.H, h, p.D, p.vec16);
  Acc o[C::kOTiles];  // this warp's O tiles: t = warp + 8n
#pragma unroll
  for (int n = 0; n < C::kOTiles; ++n) wmma::fill_fragment(o[n], 0.f);
  if (tid < BQ) sM[tid] = -INFINITY, sL[tid] = 0.f;

  int k_end = p.Tk;
  if (p.causal) k_end = min(p.Tk, q0 + BQ + (p.Tk - p.Tq));
  for (int k0 = 0; k0 < k_end; k0 += BK) {
    __syncthreads();
    load_raw<T, BK, DP, LT>(sK, k, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
    load_raw<T, BK, DP, LT>(sV, v, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
    __syncthreads();
    // S = Q K^T: (BQ/16) x (BK/16) tiles over the 8 warps.
    for (int t = warp; t < (BQ / 16) * (BK / 16); t += kThreads / 32) {
      const int tm = t / (BK / 16), tn = t % (BK / 16);
      Acc acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;  // K^T: (k, n) at sK[n][k]
        wmma::load_matrix_sync(fa, sQ + tm * 16 * LT + kk * 16, LT);
        wmma::load_matrix_sync(fb, sK + tn * 16 * LT + kk * 16, LT);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(sS + tm * 16 * LS + tn * 16, acc, LS, wmma::mem_row_major);
    }
    __syncthreads();
    {  // online softmax, TPR threads per row
      constexpr int TPR = kThreads / BQ;
      const int r = tid / TPR, lane = tid % TPR, i = q0 + r;
      float mt = -INFINITY;
      for (int j = lane; j < BK; j += TPR) {
        const float s = visible(p, b, i, k0 + j) ? sS[r * LS + j] * p.scale_log2 : -INFINITY;
        sS[r * LS + j] = s;
        mt = fmaxf(mt, s);
      }
#pragma unroll
      for (int off = TPR / 2; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off, TPR));
      const float m_old = sM[r], m_new = fmaxf(m_old, mt);
      const bool empty = m_new == -INFINITY;
      const float alpha = empty ? 1.f : exp2f(m_old - m_new);
      float sum = 0.f;
      for (int j = lane; j < BK; j += TPR) {
        const T e = from_float<T>(empty ? 0.f : exp2f(sS[r * LS + j] - m_new));
        sP[r * LP + j] = p.drop.rate > 0.f ? from_float<T>(to_float(e) * keep(p, b, h, i, k0 + j)) : e;  // O only
        sum += to_float(e);
      }
#pragma unroll
      for (int off = TPR / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off, TPR);
      for (int c = lane; c < 16; c += TPR) sR[r * 16 + c] = alpha;
      // Every lane of the row read sM[r] above; a shuffle orders no memory, so the warp syncs before it is
      // overwritten (compute-sanitizer racecheck on an H200 reported the read/write hazard).
      __syncwarp();
      if (lane == 0) sM[r] = m_new, sL[r] = sL[r] * alpha + sum;
    }
    __syncthreads();
    // O = O * alpha (per row) + P V on this warp's tiles.
#pragma unroll
    for (int n = 0; n < C::kOTiles; ++n) {
      const int t = warp + n * (kThreads / 32), tm = t / (DP / 16), tn = t % (DP / 16);
      Acc& acc = o[n];
      Acc alpha;
      wmma::load_matrix_sync(alpha, sR + tm * 16 * 16, 16, wmma::mem_row_major);
#pragma unroll
      for (int e = 0; e < acc.num_elements; ++e) acc.x[e] *= alpha.x[e];
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, sP + tm * 16 * LP + kk * 16, LP);
        wmma::load_matrix_sync(fb, sV + kk * 16 * LT + tn * 16, LT);
        wmma::mma_sync(acc, fa, fb, acc);
      }
    }
  }
  __syncthreads();  // sM / sL final, sR free (also when no key tile ran)

  if (tid < BQ) {  // final row factor w / l (0 for a row with no visible key) and lse
    const int i = q0 + tid;
    const float l = sL[tid];
    float f = l > 0.f ? 1.f / l : 0.f;
    if (w && i < p.Tq) f *= to_float(w[p.w_per_position ? ((long long)b * p.Tq + i) * p.H + h : (long long)b * p.H + h]);
    for (int c = 0; c < 16; ++c) sR[tid * 16 + c] = f;
    if (i < p.Tq) lse[((long long)b * p.H + h) * p.Tq + i] = l > 0.f ? (sM[tid] + log2f(l)) * kLn2 : -INFINITY;
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < C::kOTiles; ++n) {
    const int t = warp + n * (kThreads / 32), tm = t / (DP / 16), tn = t % (DP / 16);
    Acc f;
    wmma::load_matrix_sync(f, sR + tm * 16 * 16, 16, wmma::mem_row_major);
#pragma unroll
    for (int e = 0; e < o[n].num_elements; ++e) o[n].x[e] *= f.x[e];
    wmma::store_matrix_sync(sO + tm * 16 * LO + tn * 16, o[n], LO, wmma::mem_row_major);
  }
  __syncthreads();
  for (int idx = tid; idx < BQ * DP; idx += kThreads) {  // coalesced over d
    const int r = idx / DP, d = idx % DP, i = q0 + r;
    if (i < p.Tq && d < p.D) out[(((long long)b * p.Tq + i) * p.H + h) * p.D + d] = from_float<T>(sO[r * LO + d]);
  }
}

template <class T, int DP>
void launch_fwd_tc(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, Tensor& out,
                   Tensor& lse) {
  using C = TcTile<DP>;
  auto kernel = attention_fwd_tc_kernel<T, DP>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::smem)));
  const dim3 grid((p.Tq + C::BQ - 1) / C::BQ, p.H, p.B);
  kernel<<<grid, kThreads, C::smem, s>>>(
      p, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()),
      w.defined() ? static_cast<const T*>(w.raw()) : nullptr, static_cast<T*>(out.raw()), lse.data<float>());
  MOE_KERNEL_CHECK();
}

template <class T>
void dispatch_tc(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, Tensor& out,
                 Tensor& lse) {
  switch (padded_head_size(p.D)) {
    case 32: launch_fwd_tc<T, 32>(p, q, k, v, w, out, lse); break;
    case 64: launch_fwd_tc<T, 64>(p, q, k, v, w, out, lse); break;
    case 128: launch_fwd_tc<T, 128>(p, q, k, v, w, out, lse); break;
    default: launch_fwd_tc<T, 256>(p, q, k, v, w, out, lse); break;
  }
}
}  // namespace

void attention_forward_tc(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& head_weight, Tensor& out, Tensor& lse) {
  if (q.dtype() == DType::bf16) dispatch_tc<__nv_bfloat16>(p, q, k, v, head_weight, out, lse);
  else dispatch_tc<__half>(p, q, k, v, head_weight, out, lse);
}

}  // namespace moe::cuda
