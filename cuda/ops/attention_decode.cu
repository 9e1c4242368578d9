// Attention for few query rows: the one-query-per-step attention of beam search over its key/value caches
// (self-attention through a decoding cache's row table, cross-attention over the encoder's keys), f32, bf16
// and f16, split over the keys when the rows are too few to fill the GPU (flash-decoding).
// A block of 4 warps owns one query row (b, i, h) and one chunk of its keys; each warp takes every fourth
// key: its lanes hold D/32 elements of q (times scale log2 e) and of the row's output, the score
// s_j = q.k_j is summed over the warp by shuffles, and an online softmax in base 2 keeps the warp's
// running max m, sum l and o = sum_j 2^(s_j - m) v_j. The warps merge through shared memory:
//   M = max_w m_w,  L = sum_w l_w 2^(m_w - M),  O = sum_w o_w 2^(m_w - M).
// With one chunk the block writes out = w O / L (0 when no key is visible) and lse = (M + log2 L) ln 2
// (-inf when none); with several, each writes (O, M, L) to a workspace and attention_decode_combine
// merges the chunks by the same formula. Key j of sequence b is row key_rows[b, j] of the [R, C, Hk, D]
// cache (lib/ops/attention.h), or row b of [B, Tk, Hk, D] without a table. Semantics as attention.h
// (no dropout). Covered by tests/gpu/attention_parity_test.cpp ("decoding").
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "attention_common.cuh"
#include "common/context.h"
#include "common/cuda_check.h"
#include "tensor/cuda_runtime.h"

namespace moe::cuda {
namespace {
using namespace attn;

constexpr int kWarps = 4, kDecodeThreads = 32 * kWarps;
constexpr int kMinKeysPerChunk = 64;

struct DecodeArgs {
  const int32_t* rows;  // [B, Tk] or nullptr
  int columns;          // k's axis 1 (a cache's capacity, or Tk)
  int chunk;            // keys per block along grid y
};

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class T, int DP>
__global__ void __launch_bounds__(kDecodeThreads)
    attention_decode_kernel(Params p, DecodeArgs a, const T* __restrict__ q, const T* __restrict__ k,
                            const T* __restrict__ v, const T* __restrict__ w, T* __restrict__ out,
                            float* __restrict__ lse, float* __restrict__ part) {
  constexpr int E = DP / 32;  // elements of a row per lane
  __shared__ float s_m[kWarps], s_l[kWarps], s_o[kWarps][DP];
  const int row = blockIdx.x;  // q's [B, Tq, H] order
  const int h = row % p.H, i = row / p.H % p.Tq, b = row / (p.H * p.Tq), hk = h / p.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float qr[E], o[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int d = lane + 32 * e;
    qr[e] = d < p.D ? to_float(q[(long long)row * p.D + d]) * p.scale_log2 : 0.f;
    o[e] = 0.f;
  }
  const int j0 = blockIdx.y * a.chunk;
  int j1 = min(p.Tk, j0 + a.chunk);
  if (p.causal) j1 = min(j1, i + (p.Tk - p.Tq) + 1);
  float m = -INFINITY, l = 0.f;
  for (int j = j0 + warp; j < j1; j += kWarps) {
    if (p.pad && !p.pad[(long long)b * p.Tk + j]) continue;  // the same key for every lane: no divergence
    const long long r = a.rows ? a.rows[(long long)b * p.Tk + j] : b;
    const long long base = ((r * a.columns + j) * p.Hk + hk) * p.D;
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + 32 * e;
      if (d < p.D) s = fmaf(qr[e], to_float(k[base + d]), s);
    }
    s = warp_sum(s);
    const float m_new = fmaxf(m, s), alpha = exp2f(m - m_new), pj = exp2f(s - m_new);
    l = l * alpha + pj;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + 32 * e;
      o[e] = o[e] * alpha + (d < p.D ? pj * to_float(v[base + d]) : 0.f);
    }
    m = m_new;
  }
  if (lane == 0) s_m[warp] = m, s_l[warp] = l;
#pragma unroll
  for (int e = 0; e < E; ++e) s_o[warp][lane + 32 * e] = o[e];
  __syncthreads();

  float mm = -INFINITY;
#pragma unroll
  for (int x = 0; x < kWarps; ++x) mm = fmaxf(mm, s_m[x]);
  float ll = 0.f, f[kWarps];
#pragma unroll
  for (int x = 0; x < kWarps; ++x) {
    f[x] = s_m[x] == -INFINITY ? 0.f : exp2f(s_m[x] - mm);
    ll += s_l[x] * f[x];
  }
  const bool one_chunk = gridDim.y == 1;
  const float scale = one_chunk ? (ll > 0.f ? head_weight(p, w, b, i, h) / ll : 0.f) : 1.f;
  float* dst = part + ((long long)row * gridDim.y + blockIdx.y) * (DP + 2);
  for (int d = threadIdx.x; d < p.D; d += kDecodeThreads) {
    float od = 0.f;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) od += s_o[x][d] * f[x];
    if (one_chunk)
      out[(long long)row * p.D + d] = from_float<T>(od * scale);
    else
      dst[d] = od;
  }
  if (threadIdx.x == 0) {
    if (one_chunk)
      lse[((long long)b * p.H + h) * p.Tq + i] = ll > 0.f ? (mm + log2f(ll)) * kLn2 : -INFINITY;
    else
      dst[DP] = mm, dst[DP + 1] = ll;
  }
}

/// Merges the chunks of each row (blockIdx.x) written by attention_decode_kernel.
template <class T, int DP>
__global__ void __launch_bounds__(DP)
    attention_decode_combine(Params p, int chunks, const T* __restrict__ w, const float* __restrict__ part,
                             T* __restrict__ out, float* __restrict__ lse) {
  const int row = blockIdx.x;
  const int h = row % p.H, i = row / p.H % p.Tq, b = row / (p.H * p.Tq);
  const float* src = part + (long long)row * chunks * (DP + 2);
  float mm = -INFINITY, ll = 0.f;
  for (int c = 0; c < chunks; ++c) mm = fmaxf(mm, src[c * (DP + 2) + DP]);
  for (int c = 0; c < chunks; ++c) {
    const float mc = src[c * (DP + 2) + DP];
    if (mc != -INFINITY) ll += src[c * (DP + 2) + DP + 1] * exp2f(mc - mm);
  }
  const int d = threadIdx.x;
  if (d < p.D) {
    float od = 0.f;
    for (int c = 0; c < chunks; ++c) {
      const float mc = src[c * (DP + 2) + DP];
      if (mc != -INFINITY) od += src[c * (DP + 2) + d] * exp2f(mc - mm);
    }
    out[(long long)row * p.D + d] = from_float<T>(ll > 0.f ? od * head_weight(p, w, b, i, h) / ll : 0.f);
  }
  if (d == 0) lse[((long long)b * p.H + h) * p.Tq + i] = ll > 0.f ? (mm + log2f(ll)) * kLn2 : -INFINITY;
}

template <class T, int DP>
void launch_decode(const Params& p, const DecodeArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& hw, Tensor& out, Tensor& lse) {
  const cudaStream_t s = stream(q.device());
  const long long rows = (long long)p.B * p.Tq * p.H;
  const int chunks = std::max(1, (p.Tk + args.chunk - 1) / args.chunk);
  Tensor part;
  if (chunks > 1) part = Tensor::empty(Shape{rows * chunks * (DP + 2)}, DType::f32, q.device());
  const T* w = hw.defined() ? static_cast<const T*>(hw.raw()) : nullptr;
  attention_decode_kernel<T, DP><<<dim3(unsigned(rows), unsigned(chunks)), kDecodeThreads, 0, s>>>(
      p, args, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()), w,
      static_cast<T*>(out.raw()), lse.data<float>(), chunks > 1 ? part.data<float>() : nullptr);
  MOE_KERNEL_CHECK();
  if (chunks == 1) return;
  attention_decode_combine<T, DP>
      <<<unsigned(rows), DP, 0, s>>>(p, chunks, w, part.data<float>(), static_cast<T*>(out.raw()), lse.data<float>());
  MOE_KERNEL_CHECK();
}

template <class T>
void launch_for_head_size(const Params& p, const DecodeArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& hw, Tensor& out, Tensor& lse) {
  switch (padded_head_size(p.D)) {
    case 32:
      launch_decode<T, 32>(p, args, q, k, v, hw, out, lse);
      break;
    case 64:
      launch_decode<T, 64>(p, args, q, k, v, hw, out, lse);
      break;
    case 128:
      launch_decode<T, 128>(p, args, q, k, v, hw, out, lse);
      break;
    default:
      launch_decode<T, 256>(p, args, q, k, v, hw, out, lse);
      break;
  }
}
}  // namespace

int attention_decode_chunk(int rows, int keys, int multiprocessors) {
  // Enough blocks for four per multiprocessor, but no chunk under kMinKeysPerChunk keys.
  const long long want = 4LL * multiprocessors;
  const int chunks = int(std::clamp<long long>((want + rows - 1) / std::max(rows, 1), 1,
                                               std::max(1, (keys + kMinKeysPerChunk - 1) / kMinKeysPerChunk)));
  return std::max(1, (keys + chunks - 1) / chunks);
}

void attention_decode(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& head_weight, const Tensor& key_rows, Tensor& out, Tensor& lse) {
  MOE_CHECK((long long)p.B * p.Tq * p.H <= 0x7fffffffLL, "attention (CUDA decoding): ", p.B, " x ", p.Tq, " x ", p.H,
            " query rows exceed the grid");
  DecodeArgs args{key_rows.defined() ? key_rows.data<int32_t>() : nullptr, int(k.shape()[1]), 0};
  args.chunk = attention_decode_chunk(p.B * p.Tq * p.H, p.Tk, multiprocessor_count(q.device().index));
  if (q.dtype() == DType::bf16)
    launch_for_head_size<__nv_bfloat16>(p, args, q, k, v, head_weight, out, lse);
  else if (q.dtype() == DType::f16)
    launch_for_head_size<__half>(p, args, q, k, v, head_weight, out, lse);
  else
    launch_for_head_size<float>(p, args, q, k, v, head_weight, out, lse);
}

}  // namespace moe::cuda
