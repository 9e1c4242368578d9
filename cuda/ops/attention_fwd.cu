// Fused attention forward on the GPU (FlashAttention-2 structure, f32 math): one block per
// (query tile of BQ rows, head, batch); K/V tiles of BK keys stream through shared memory; scores
// S = Q K^T live only in shared memory; an online softmax keeps the running max m and sum l per row
// (base 2: s2 = scale*log2(e)*q.k) and rescales the O accumulator (registers) by 2^(m_old - m_new).
// out = w * O / l (0 for rows with no visible key), lse = (m + log2 l) * ln 2. Causal mode stops at the
// last key tile any row of the block can see. Attention dropout scales the weights that enter O (not l)
// by keep() (attention_dropout.h). bf16/f16 go to a tensor-core kernel (ops/kernel_variants.h): on sm_90a
// wgmma (attention_fwd_wgmma.cu) for the calls it takes (head size 64 or 128, no dropout, operands TMA can
// move), else mma.sync (attention_fwd_mma.cu, the default on sm_80) or wmma (attention_fwd_tc.cu); this one
// serves f32. One query row per sequence (a decoding step) or a decoding cache's row table goes to
// attention_decode.cu. Covered by tests/gpu/attention_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <vector>

#include "attention_common.cuh"
#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/attention.h"
#include "ops/kernel_variants.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
using namespace attn;

template <int DP>
struct FwdTile {
  static constexpr int BQ = 64, BK = DP >= 256 ? 32 : 64;
  static constexpr int LD = DP + 1, LS = BK + 1;
  static constexpr size_t smem = sizeof(float) * (size_t(BQ) * LD + 2 * size_t(BK) * LD + size_t(BQ) * LS + 3 * BQ);
};

template <class T, int DP>
__global__ void __launch_bounds__(kThreads)
    attention_fwd_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         const T* __restrict__ w, T* __restrict__ out, float* __restrict__ lse) {
  using C = FwdTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, LS = C::LS, RA = BQ / 16;
  extern __shared__ float smem[];
  float *sQ = smem, *sK = sQ + BQ * LD, *sV = sK + BK * LD, *sS = sV + BK * LD;
  float *sM = sS + BQ * LS, *sL = sM + BQ, *sA = sL + BQ;
  const int q0 = blockIdx.x * BQ, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;

  load_tile<T, BQ, DP>(sQ, q, b, q0, p.Tq, p.H, h, p.D, p.scale_log2);
  if (tid < BQ) sM[tid] = -INFINITY, sL[tid] = 0.f;
  float o[RA][DP / 16];
#pragma unroll
  for (int a = 0; a < RA; ++a)
#pragma unroll
    for (int c = 0; c < DP / 16; ++c) o[a][c] = 0.f;

  int k_end = p.Tk;  // causal: the last row q0+BQ-1 sees keys j <= q0+BQ-1 + Tk-Tq
  if (p.causal) k_end = min(p.Tk, q0 + BQ + (p.Tk - p.Tq));
  for (int k0 = 0; k0 < k_end; k0 += BK) {
    __syncthreads();  // the previous tile is no longer read
    load_tile<T, BK, DP>(sK, k, b, k0, p.Tk, p.Hk, hk, p.D, 1.f);
    load_tile<T, BK, DP>(sV, v, b, k0, p.Tk, p.Hk, hk, p.D, 1.f);
    __syncthreads();
    float s[RA][BK / 16];
#pragma unroll
    for (int a = 0; a < RA; ++a)
#pragma unroll
      for (int c = 0; c < BK / 16; ++c) s[a][c] = 0.f;
    mm_nt<RA, BK / 16, DP>(s, sQ, LD, sK, LD);
#pragma unroll
    for (int a = 0; a < RA; ++a)
#pragma unroll
      for (int c = 0; c < BK / 16; ++c) {
        const int r = ty + 16 * a, j = tx + 16 * c;
        sS[r * LS + j] = visible(p, b, q0 + r, k0 + j) ? s[a][c] : -INFINITY;
      }
    __syncthreads();
    {  // online softmax: TPR threads per row (a contiguous lane group of one warp)
      constexpr int TPR = kThreads / BQ;
      const int r = tid / TPR, lane = tid % TPR;
      float mt = -INFINITY;
      for (int j = lane; j < BK; j += TPR) mt = fmaxf(mt, sS[r * LS + j]);
#pragma unroll
      for (int off = TPR / 2; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off, TPR));
      const float m_old = sM[r], m_new = fmaxf(m_old, mt);
      const bool empty = m_new == -INFINITY;  // nothing visible yet: keep zeros
      const float alpha = empty ? 1.f : exp2f(m_old - m_new);
      float sum = 0.f;
      for (int j = lane; j < BK; j += TPR) {
        const float e = empty ? 0.f : exp2f(sS[r * LS + j] - m_new);
        sS[r * LS + j] = e == 0.f ? 0.f : e * keep(p, b, h, q0 + r, k0 + j);  // dropout: O only, not l
        sum += e;
      }
#pragma unroll
      for (int off = TPR / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off, TPR);
      // Every lane of the row read sM[r] above; a shuffle orders no memory, so the warp syncs before it is
      // overwritten (compute-sanitizer racecheck on an H200 reported the read/write hazard).
      __syncwarp();
      if (lane == 0) sM[r] = m_new, sL[r] = sL[r] * alpha + sum, sA[r] = alpha;
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < RA; ++a) {
      const float alpha = sA[ty + 16 * a];
#pragma unroll
      for (int c = 0; c < DP / 16; ++c) o[a][c] *= alpha;
    }
    mm_nn<RA, DP / 16, BK>(o, sS, LS, sV, LD);
  }
  __syncthreads();  // sM / sL final (also when no key tile ran)

#pragma unroll
  for (int a = 0; a < RA; ++a) {
    const int r = ty + 16 * a, i = q0 + r;
    if (i >= p.Tq) continue;
    const float l = sL[r];
    float f = l > 0.f ? 1.f / l : 0.f;
    if (w) f *= to_float(w[p.w_per_position ? ((long long)b * p.Tq + i) * p.H + h : (long long)b * p.H + h]);
    T* dst = out + (((long long)b * p.Tq + i) * p.H + h) * p.D;
#pragma unroll
    for (int c = 0; c < DP / 16; ++c) {
      const int d = tx + 16 * c;
      if (d < p.D) dst[d] = from_float<T>(o[a][c] * f);
    }
  }
  if (tid < BQ && q0 + tid < p.Tq) {
    const float l = sL[tid];
    lse[((long long)b * p.H + h) * p.Tq + q0 + tid] = l > 0.f ? (sM[tid] + log2f(l)) * kLn2 : -INFINITY;
  }
}

template <class T, int DP>
void launch_fwd(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, Tensor& out,
                Tensor& lse) {
  using C = FwdTile<DP>;
  auto kernel = attention_fwd_kernel<T, DP>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::smem)));
  const dim3 grid((p.Tq + C::BQ - 1) / C::BQ, p.H, p.B);
  kernel<<<grid, kThreads, C::smem, s>>>(
      p, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()),
      w.defined() ? static_cast<const T*>(w.raw()) : nullptr, static_cast<T*>(out.raw()), lse.data<float>());
  MOE_KERNEL_CHECK();
}
}  // namespace

attn::Params attention_params(const Tensor& q, const Tensor& k, const Tensor& key_padding, bool causal, float scale,
                              const Tensor& head_weight) {
  // Grids are (query or key tiles, heads, batch): the heads and the batch are grid y and z.
  MOE_CHECK(q.shape()[0] <= 65535 && q.shape()[2] <= 65535, "attention (CUDA): batch ", q.shape()[0], " and heads ",
            q.shape()[2], " of q ", q.shape(), " must each be at most 65535 (grid y/z limit)");
  attn::Params p{};
  p.B = int(q.shape()[0]), p.Tq = int(q.shape()[1]), p.H = int(q.shape()[2]), p.D = int(q.shape()[3]);
  p.Tk = int(k.shape()[1]), p.Hk = int(k.shape()[2]), p.group = p.H / p.Hk;
  p.causal = causal;
  p.w_per_position = head_weight.defined() && head_weight.shape().ndim() == 3;
  p.scale = scale;
  p.scale_log2 = scale * attn::kLog2e;
  p.pad = key_padding.defined() ? key_padding.data<uint8_t>() : nullptr;
  auto aligned = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0; };
  p.vec16 = dtype_size(q.dtype()) == 2 && p.D % 8 == 0 && aligned(q) && aligned(k);
  return p;
}

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout, const Tensor& key_rows) {
  attn::Params p = attention_params(q, k, key_padding, causal, scale, head_weight);
  p.drop = dropout;
  p.vec16 = p.vec16 && reinterpret_cast<uintptr_t>(v.raw()) % 16 == 0;
  if (q.numel() == 0) return;
  MOE_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::bf16 || q.dtype() == DType::f16,
            "attention: the CUDA kernels support f32, bf16 and f16, not ", dtype_name(q.dtype()));
  if (key_rows.defined() || (p.Tq == 1 && dropout.rate == 0.f)) {  // decoding: a block per query row
    p.Tk = int(key_rows.defined() ? key_rows.shape()[1] : k.shape()[1]);
    attention_decode(p, q, k, v, head_weight, key_rows, out, lse);
    return;
  }
  if (k.numel() == 0) {  // no keys at all: every row is empty
    out.zero_();
    std::vector<float> inf(static_cast<size_t>(lse.numel()), -INFINITY);
    lse.copy_from(Tensor::from_vector(inf, lse.shape()));
    return;
  }
  const KernelShape shape{attention_forward_wgmma_fits(p, v, out)};  // what the wgmma variant takes
  const KernelVariant& variant =
      choose_kernel(KernelOp::attention_forward, q.dtype(), compute_capability(q.device().index), shape);
  if (variant.impl == KernelImpl::wgmma) {  // bf16 / f16 on sm_90a: head sizes 64 and 128 by TMA
    attention_forward_wgmma(p, q, k, v, head_weight, out, lse);
    return;
  }
  if (variant.impl == KernelImpl::mma) {  // bf16 / f16: mma.sync (the default on sm_80, the fallback on sm_90)
    attention_forward_mma(p, q, k, v, head_weight, out, lse);
    return;
  }
  if (variant.impl == KernelImpl::wmma) {  // bf16 / f16: wmma
    attention_forward_tc(p, q, k, v, head_weight, out, lse);
    return;
  }
  // f32: the FMA kernel (the only variant that takes f32), instantiated for f32 only.
  switch (attn::padded_head_size(p.D)) {
    case 32: launch_fwd<float, 32>(p, q, k, v, head_weight, out, lse); break;
    case 64: launch_fwd<float, 64>(p, q, k, v, head_weight, out, lse); break;
    case 128: launch_fwd<float, 128>(p, q, k, v, head_weight, out, lse); break;
    default: launch_fwd<float, 256>(p, q, k, v, head_weight, out, lse); break;
  }
}

}  // namespace moe::cuda
