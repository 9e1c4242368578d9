// Fused attention backward on the GPU (FlashAttention-2 structure, f32 math). A pre-pass computes
// delta_i = sum_d dout*out (= w_i sum_j p_ij dout_i.v_j). The main kernel owns one key tile of one key
// head (all query heads sharing it, so dk/dv need no atomics): it keeps dK, dV in registers, streams
// query tiles, recomputes p = 2^(s2 - lse2) and forms dp = w dout.v, ds = p (dp - delta); then
// dV += (w p)^T dout, dK += scale ds^T q, dQ += scale ds k (f32 atomics into a workspace) and
// dw += sum_j p dout.v (f32 atomics). Causal mode starts at the first query tile that sees the key
// tile. With attention dropout, p z enters dV and dw and w z dp enters ds (z = keep(), the forward's factor).
// A last pass adds the f32 workspaces into dq and dhead_weight. Covered by
// tests/gpu/attention_parity_test.cpp. bf16/f16 run the main pass on tensor cores: on sm_90a the wgmma
// kernel (attention_bwd_wgmma.cu) for the calls it takes (head size 64 or 128, no dropout, operands TMA can
// move), else the mma.sync kernel (attention_bwd_mma.cu); both add dq themselves into workspaces the pre-pass
// zeroes. Forced, the wmma one (attention_bwd_tc.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

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
struct BwdTile {
  static constexpr int BQ = DP <= 64 ? 64 : 32, BK = DP >= 256 ? 32 : 64;
  static constexpr int LD = DP + 1, LS = BK + 1;
  static constexpr size_t smem =
      sizeof(float) * (2 * size_t(BK) * LD + 2 * size_t(BQ) * LD + 2 * size_t(BQ) * LS + 3 * BQ);
};

/// delta[b,h,i] = sum_d dout[b,i,h,d] * out[b,i,h,d]: one warp per row. For the mma and wgmma kernels it also
/// zeroes their workspaces (each null when not wanted): the row's f32 dQ accumulator (D floats
/// at the row's index in q's layout), its dw accumulator and, for the first row of each query tile of
/// `bq` rows, the tile's arrival counter ([B,H,ceil(Tq/bq)]).
template <class T>
__global__ void attention_delta_kernel(const T* __restrict__ dout, const T* __restrict__ out, float* __restrict__ delta,
                                       int Tq, int H, int D, long long rows, float* __restrict__ zero_dq,
                                       float* __restrict__ zero_dw, int* __restrict__ zero_count, int bq) {
  const int lane = threadIdx.x % 32;
  for (long long r = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; r < rows;
       r += (long long)gridDim.x * blockDim.x / 32) {
    float s = 0.f;
    for (int d = lane; d < D; d += 32) s += to_float(dout[r * D + d]) * to_float(out[r * D + d]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (zero_dq)
      for (int d = lane; d < D; d += 32) zero_dq[r * D + d] = 0.f;
    if (lane == 0) {
      const long long h = r % H, i = (r / H) % Tq, b = r / ((long long)H * Tq);
      delta[(b * H + h) * Tq + i] = s;
      if (zero_dw) zero_dw[r] = 0.f;
      if (zero_count && i % bq == 0) zero_count[(b * H + h) * ((Tq + bq - 1) / bq) + i / bq] = 0;
    }
  }
}

template <class T, int DP>
__global__ void __launch_bounds__(kThreads)
    attention_bwd_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         const T* __restrict__ w, const T* __restrict__ dout, const float* __restrict__ lse,
                         const float* __restrict__ delta, float* __restrict__ dq_acc, float* __restrict__ dw_acc,
                         T* __restrict__ dk, T* __restrict__ dv) {
  using C = BwdTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, LS = C::LS, RQ = BQ / 16, RK = BK / 16, CD = DP / 16;
  extern __shared__ float smem[];
  float *sK = smem, *sV = sK + BK * LD, *sQ = sV + BK * LD, *sO = sQ + BQ * LD;  // sO: dout tile
  float *sP = sO + BQ * LD, *sS = sP + BQ * LS, *sLse = sS + BQ * LS, *sDelta = sLse + BQ, *sW = sDelta + BQ;
  const int k0 = blockIdx.x * BK, hk = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;

  load_tile<T, BK, DP>(sK, k, b, k0, p.Tk, p.Hk, hk, p.D, 1.f);
  load_tile<T, BK, DP>(sV, v, b, k0, p.Tk, p.Hk, hk, p.D, 1.f);
  float dk_acc[RK][CD], dv_acc[RK][CD];
#pragma unroll
  for (int a = 0; a < RK; ++a)
#pragma unroll
    for (int c = 0; c < CD; ++c) dk_acc[a][c] = 0.f, dv_acc[a][c] = 0.f;

  // Query i sees key k0 only if k0 <= i + Tk - Tq: earlier query tiles see none of this key tile.
  const int q_begin = p.causal ? max(0, k0 - (p.Tk - p.Tq)) / BQ * BQ : 0;
  for (int h = hk * p.group; h < (hk + 1) * p.group; ++h) {
    for (int q0 = q_begin; q0 < p.Tq; q0 += BQ) {
      __syncthreads();  // the previous query tile is no longer read
      load_tile<T, BQ, DP>(sQ, q, b, q0, p.Tq, p.H, h, p.D, 1.f);
      load_tile<T, BQ, DP>(sO, dout, b, q0, p.Tq, p.H, h, p.D, 1.f);
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
      float s[RQ][RK], dp[RQ][RK];
#pragma unroll
      for (int a = 0; a < RQ; ++a)
#pragma unroll
        for (int c = 0; c < RK; ++c) s[a][c] = 0.f, dp[a][c] = 0.f;
      mm_nt<RQ, RK, DP>(s, sQ, LD, sK, LD);
      mm_nt<RQ, RK, DP>(dp, sO, LD, sV, LD);
      float dw_part[RQ];
#pragma unroll
      for (int a = 0; a < RQ; ++a) {
        const int r = ty + 16 * a;
        const float lse2 = sLse[r], wt = sW[r], dl = sDelta[r];
        dw_part[a] = 0.f;
#pragma unroll
        for (int c = 0; c < RK; ++c) {
          const int j = tx + 16 * c;
          const bool vis = lse2 != -INFINITY && visible(p, b, q0 + r, k0 + j);
          const float pij = vis ? exp2f(s[a][c] * p.scale_log2 - lse2) : 0.f;
          const float z = vis ? keep(p, b, h, q0 + r, k0 + j) : 0.f;  // the forward's dropout factor
          sP[r * LS + j] = pij * z * wt;
          sS[r * LS + j] = pij * (wt * z * dp[a][c] - dl) * p.scale;
          dw_part[a] += pij * z * dp[a][c];
        }
      }
      if (dw_acc) {  // uniform over the block: the 16 lanes of a row reduce, lane tx = 0 adds
#pragma unroll
        for (int a = 0; a < RQ; ++a) {
          float t = dw_part[a];
#pragma unroll
          for (int off = 8; off > 0; off >>= 1) t += __shfl_xor_sync(0xffffffffu, t, off, 16);
          const int i = q0 + ty + 16 * a;
          if (tx == 0 && i < p.Tq) atomicAdd(&dw_acc[((long long)b * p.Tq + i) * p.H + h], t);
        }
      }
      __syncthreads();
      mm_tn<RK, CD, BQ>(dv_acc, sP, LS, sO, LD);
      mm_tn<RK, CD, BQ>(dk_acc, sS, LS, sQ, LD);
      if (dq_acc) {
        float dq[RQ][CD];
#pragma unroll
        for (int a = 0; a < RQ; ++a)
#pragma unroll
          for (int c = 0; c < CD; ++c) dq[a][c] = 0.f;
        mm_nn<RQ, CD, BK>(dq, sS, LS, sK, LD);
#pragma unroll
        for (int a = 0; a < RQ; ++a) {
          const int i = q0 + ty + 16 * a;
          if (i >= p.Tq) continue;
          float* dst = dq_acc + (((long long)b * p.Tq + i) * p.H + h) * p.D;
#pragma unroll
          for (int c = 0; c < CD; ++c)
            if (tx + 16 * c < p.D) atomicAdd(dst + tx + 16 * c, dq[a][c]);
        }
      }
    }
  }
#pragma unroll
  for (int a = 0; a < RK; ++a) {
    const int j = k0 + ty + 16 * a;
    if (j >= p.Tk) continue;
    const long long base = (((long long)b * p.Tk + j) * p.Hk + hk) * p.D;
#pragma unroll
    for (int c = 0; c < CD; ++c) {
      const int d = tx + 16 * c;
      if (d >= p.D) continue;
      if (dk) dk[base + d] = from_float<T>(to_float(dk[base + d]) + dk_acc[a][c]);
      if (dv) dv[base + d] = from_float<T>(to_float(dv[base + d]) + dv_acc[a][c]);
    }
  }
}

/// dst += src (f32 workspace into the storage type).
template <class T>
__global__ void attention_add_kernel(T* __restrict__ dst, const float* __restrict__ src, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = from_float<T>(to_float(dst[i]) + src[i]);
}

/// dw[b,h] += sum_t acc[b,t,h] (head_weight [B,H]).
template <class T>
__global__ void attention_dw_sum_kernel(T* __restrict__ dw, const float* __restrict__ acc, int B, int Tq, int H) {
  for (long long bh = blockIdx.x * (long long)blockDim.x + threadIdx.x; bh < (long long)B * H;
       bh += (long long)gridDim.x * blockDim.x) {
    const long long b = bh / H, h = bh % H;
    float s = 0.f;
    for (int t = 0; t < Tq; ++t) s += acc[(b * Tq + t) * H + h];
    dw[bh] = from_float<T>(to_float(dw[bh]) + s);
  }
}

template <class T, int DP>
void launch_bwd(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                const Tensor& dout, const Tensor& lse, const Tensor& delta, Tensor& dq_acc, Tensor& dw_acc, Tensor& dk,
                Tensor& dv) {
  using C = BwdTile<DP>;
  auto kernel = attention_bwd_kernel<T, DP>;
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
}  // namespace

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout) {
  Params p = attention_params(q, k, key_padding, causal, scale, head_weight);
  p.drop = dropout;
  p.vec16 = p.vec16 && reinterpret_cast<uintptr_t>(v.raw()) % 16 == 0 && reinterpret_cast<uintptr_t>(dout.raw()) % 16 == 0;
  if (q.numel() == 0 || k.numel() == 0) return;  // no visible pair: every gradient is zero
  if (!dq.defined() && !dk.defined() && !dv.defined() && !dhead_weight.defined()) return;
  const Device dev = q.device();
  cudaStream_t st = stream(dev);
  const KernelShape shape{attention_backward_wgmma_fits(p)};  // what the wgmma variant takes
  const KernelImpl impl =
      choose_kernel(KernelOp::attention_backward, q.dtype(), compute_capability(dev.index), shape).impl;
  const bool sixteen_bit = q.dtype() != DType::f32;
  MOE_CHECK(sixteen_bit == (impl != KernelImpl::simt), "attention backward: variant ", enum_name(impl),
            " has no kernel for ", dtype_name(q.dtype()));
  // The mma and wgmma kernels' workspaces are zeroed by the delta pre-pass, and they add dQ into dq themselves.
  const bool adds_dq = impl == KernelImpl::mma || impl == KernelImpl::wgmma;
  auto workspace = [&](const Shape& s, DType t) {
    return adds_dq ? Tensor::empty(s, t, dev) : Tensor::zeros(s, t, dev);
  };
  Tensor delta = Tensor::empty(Shape{p.B, p.H, p.Tq}, DType::f32, dev);
  Tensor dq_acc = dq.defined() ? workspace(q.shape(), DType::f32) : Tensor();
  Tensor dw_acc = dhead_weight.defined() ? workspace(Shape{p.B, p.Tq, p.H}, DType::f32) : Tensor();
  const int bq = attention_backward_mma_query_tile();
  Tensor dq_count =
      adds_dq && dq.defined() ? Tensor::empty(Shape{p.B, p.H, (p.Tq + bq - 1) / bq}, DType::i32, dev) : Tensor();
  const long long rows = (long long)p.B * p.Tq * p.H;
  MOE_FLOAT_SWITCH(q.dtype(), "attention", T, {
    attention_delta_kernel<T><<<grid_for(rows * 32), 256, 0, st>>>(
        static_cast<const T*>(dout.raw()), static_cast<const T*>(out.raw()), delta.data<float>(), p.Tq, p.H, p.D, rows,
        adds_dq && dq.defined() ? dq_acc.data<float>() : nullptr,
        adds_dq && dhead_weight.defined() ? dw_acc.data<float>() : nullptr,
        dq_count.defined() ? dq_count.data<int32_t>() : nullptr, bq);
    MOE_KERNEL_CHECK();
    if constexpr (std::is_same_v<T, float>) {  // the FMA kernel: instantiated for f32 only
      switch (padded_head_size(p.D)) {
        case 32: launch_bwd<T, 32>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
        case 64: launch_bwd<T, 64>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
        case 128: launch_bwd<T, 128>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
        default: launch_bwd<T, 256>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv); break;
      }
    } else if (impl == KernelImpl::wgmma) {  // bf16 / f16 on sm_90a: head sizes 64 and 128 by TMA
      attention_backward_wgmma(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv);
    } else if (impl == KernelImpl::mma) {  // bf16 / f16: mma.sync, dq added in the kernel
      attention_backward_mma(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv);
    } else {  // bf16 / f16: wmma
      attention_backward_tc(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dw_acc, dk, dv);
    }
    if (dq.defined() && !adds_dq) {
      attention_add_kernel<T><<<grid_for(q.numel()), 256, 0, st>>>(static_cast<T*>(dq.raw()), dq_acc.data<float>(),
                                                                   q.numel());
      MOE_KERNEL_CHECK();
    }
    if (dhead_weight.defined()) {
      if (p.w_per_position)
        attention_add_kernel<T><<<grid_for(rows), 256, 0, st>>>(static_cast<T*>(dhead_weight.raw()),
                                                                dw_acc.data<float>(), rows);
      else
        attention_dw_sum_kernel<T><<<grid_for((long long)p.B * p.H), 256, 0, st>>>(
            static_cast<T*>(dhead_weight.raw()), dw_acc.data<float>(), p.B, p.Tq, p.H);
      MOE_KERNEL_CHECK();
    }
  });
}

}  // namespace moe::cuda
