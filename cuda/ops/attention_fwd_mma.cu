// The mma.sync attention forward for bf16/f16 on sm_80+ (FlashAttention-2's schedule), the default on
// those GPUs (ops/kernel_variants.h). A block of 4 warps owns 64 query rows of one (batch, head), each
// warp 16 of them; K and V tiles of BK keys stream through a 2- or 3-stage cp.async pipeline (one
// barrier per tile). Per tile each warp computes S = Q K^T with mma.m16n8k16 (Q by ldmatrix, kept in
// registers for head sizes up to 128; K by ldmatrix), scales it into the base-2 domain
// (s2 = scale log2(e) q.k), masks it only on tiles that need it (the causal diagonal, the tile holding
// the end of the keys, every tile of a padding mask that is not a prefix), and runs the online softmax
// in registers: row max m and sum l over the quad of lanes holding a row (__shfl_xor_sync), O rescaled
// by 2^(m_old - m_new), P = 2^(s2 - m_new) re-packed from the S accumulators as the A operand of
// O += P V (V by ldmatrix.trans). Attention dropout scales the P entering O by keep() (the row sum l
// stays undropped). out = w O / l (0 for a row with no visible key), staged through shared memory for
// 16-byte stores; lse = (m + log2 l) ln 2 (-inf for such a row). Causal grids run the heaviest query
// tiles first. Semantics as attention.h; covered by tests/gpu/attention_parity_test.cpp (every variant).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attention_mma.cuh"
#include "common/context.h"
#include "common/cuda_check.h"

namespace moe::cuda {
namespace {
using namespace attn;
using namespace attn::mma;

template <int DP>
struct FwdMmaTile {
  static constexpr int BQ = 16 * kMmaWarps, BK = DP >= 256 ? 32 : 64, kStages = DP <= 64 ? 3 : 2;
  static constexpr int LD = DP + 8;  // 16 bytes of padding per row
  static constexpr bool kQInRegs = DP <= 128;
  static constexpr size_t elems = size_t(BQ) * LD + size_t(kStages) * 2 * BK * LD;
  static constexpr size_t smem = 2 * elems + 2 * kMmaWarps * sizeof(int);
};

template <class T, int DP>
__global__ void __launch_bounds__(kMmaThreads)
    attention_fwd_mma_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                             const T* __restrict__ w, T* __restrict__ out, float* __restrict__ lse, bool out16) {
  using C = FwdMmaTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, S = C::kStages, NK = BK / 8, ND = DP / 8, KD = DP / 16;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sKV = sQ + BQ * LD;  // stage s: K at sKV + 2 s BK LD, V after it
  int* scratch = reinterpret_cast<int*>(smem_raw + 2 * C::elems);
  const int h = blockIdx.x % p.H, b = blockIdx.x / p.H, hk = h / p.group;
  const int q0 = (p.causal ? gridDim.y - 1 - blockIdx.y : blockIdx.y) * BQ;  // causal: heaviest tiles first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const int off = p.Tk - p.Tq;  // query i sees keys j <= i + off (causal)

  const KeyExtent kv = key_extent(p, b, scratch);
  const int k_end = p.causal ? min(kv.end, q0 + BQ + off) : kv.end;
  const int n_tiles = k_end > 0 ? (k_end + BK - 1) / BK : 0;
  auto load_kv = [&](int tile) {
    if (tile < n_tiles) {
      T* st = sKV + (tile % S) * 2 * BK * LD;
      load_rows<T, BK, DP, LD>(st, k, b, tile * BK, p.Tk, p.Hk, hk, p.D, p.vec16);
      load_rows<T, BK, DP, LD>(st + BK * LD, v, b, tile * BK, p.Tk, p.Hk, hk, p.D, p.vec16);
    }
    ptx::cp_async_commit();  // empty groups past the end keep the count in flight uniform
  };
  load_rows<T, BQ, DP, LD>(sQ, q, b, q0, p.Tq, p.H, h, p.D, p.vec16);  // in the first group
#pragma unroll
  for (int s = 0; s < S - 1; ++s) load_kv(s);

  const T* sQw = sQ + warp * 16 * LD;  // this warp's 16 query rows
  uint32_t qf[C::kQInRegs ? KD : 1][4];
  float o[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows g and g + 8; l: this lane's columns only
  const int row0 = q0 + warp * 16 + g;

  for (int it = 0; it < n_tiles; ++it) {
    ptx::cp_async_wait<S - 2>();  // tile it (and Q) landed for this thread's copies ...
    __syncthreads();              // ... and everyone's; the stage of tile it - 1 is free again
    load_kv(it + S - 1);
    if constexpr (C::kQInRegs) {
      if (it == 0) {
#pragma unroll
        for (int kk = 0; kk < KD; ++kk) ldsm_a(qf[kk], sQw + kk * 16, LD);
      }
    }
    const T* sK = sKV + (it % S) * 2 * BK * LD;
    const T* sV = sK + BK * LD;
    const int k0 = it * BK;

    float s[NK][4];
#pragma unroll
    for (int n = 0; n < NK; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      uint32_t a[4];
      if constexpr (C::kQInRegs) a[0] = qf[kk][0], a[1] = qf[kk][1], a[2] = qf[kk][2], a[3] = qf[kk][3];
      else ldsm_a(a, sQw + kk * 16, LD);
#pragma unroll
      for (int n = 0; n < NK; n += 2) {
        uint32_t bb[2][2];
        ldsm_b(bb, sK + n * 8 * LD + kk * 16, LD);
        ptx::mma_m16n8k16<T>(s[n], a, bb[0], s[n]);
        ptx::mma_m16n8k16<T>(s[n + 1], a, bb[1], s[n + 1]);
      }
    }
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) s[n][i] *= p.scale_log2;
    if (kv.general || k0 + BK > kv.end || (p.causal && k0 + BK - 1 > row0 - g + off)) {  // this warp's rows
#pragma unroll
      for (int n = 0; n < NK; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (!visible_key(p, kv, b, row0 + 8 * (i / 2), k0 + 8 * n + 2 * t4 + i % 2)) s[n][i] = -INFINITY;
    }
    // Online softmax: new row max over the quad, rescale O and l, P = 2^(s2 - m).
    float mu[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < NK; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
      mx = quad_max(mx);
      mu[r] = mx == -INFINITY ? 0.f : mx;  // nothing visible yet: every p is 2^-inf = 0
      const float alpha = exp2f(m[r] - mu[r]);
      m[r] = mx, l[r] *= alpha;
#pragma unroll
      for (int n = 0; n < ND; ++n) o[n][2 * r] *= alpha, o[n][2 * r + 1] *= alpha;
    }
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float e = exp2f(s[n][i] - mu[i / 2]);
        l[i / 2] += e;
        s[n][i] = e;
      }
    if (p.drop.rate > 0.f) {  // the weights entering O, not l
#pragma unroll
      for (int n = 0; n < NK; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (s[n][i] != 0.f) s[n][i] *= keep(p, b, h, row0 + 8 * (i / 2), k0 + 8 * n + 2 * t4 + i % 2);
    }
    // O += P V: P from the S accumulators, V [key][d] read transposed.
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t a[4];
      acc_to_a<T>(a, s, kk);
#pragma unroll
      for (int n = 0; n < ND; n += 2) {
        uint32_t bb[2][2];
        ldsm_b_trans(bb, sV + kk * 16 * LD + n * 8, LD);
        ptx::mma_m16n8k16<T>(o[n], a, bb[0], o[n]);
        ptx::mma_m16n8k16<T>(o[n + 1], a, bb[1], o[n + 1]);
      }
    }
  }
  ptx::cp_async_wait<0>();  // nothing in flight past here (Q alone when no key tile ran)
  __syncthreads();          // every copy into sQ landed before the warps reuse their rows for O

  float f[2];
  row_factors(p, w, b, h, row0, t4, m, l, f, lse);
  T* sO = sQ + warp * 16 * LD;  // this warp's Q rows, read by no other warp
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      *reinterpret_cast<uint32_t*>(sO + (g + 8 * r) * LD + n * 8 + 2 * t4) =
          ptx::pack2<T>(o[n][2 * r] * f[r], o[n][2 * r + 1] * f[r]);
  __syncwarp();
  const int r0 = q0 + warp * 16;
  if (out16) {
    for (int idx = lane; idx < 16 * DP / 8; idx += 32) {
      const int r = idx / (DP / 8), d = idx % (DP / 8) * 8;
      if (r0 + r < p.Tq && d < p.D)
        *reinterpret_cast<uint4*>(out + (((long long)b * p.Tq + r0 + r) * p.H + h) * p.D + d) =
            *reinterpret_cast<const uint4*>(sO + r * LD + d);
    }
  } else {
    for (int idx = lane; idx < 16 * DP; idx += 32) {
      const int r = idx / DP, d = idx % DP;
      if (r0 + r < p.Tq && d < p.D) out[(((long long)b * p.Tq + r0 + r) * p.H + h) * p.D + d] = sO[r * LD + d];
    }
  }
}

template <class T, int DP>
void launch_fwd_mma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, Tensor& out,
                    Tensor& lse) {
  using C = FwdMmaTile<DP>;
  auto kernel = attention_fwd_mma_kernel<T, DP>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::smem)));
  const dim3 grid(unsigned(p.B) * unsigned(p.H), (p.Tq + C::BQ - 1) / C::BQ);
  const bool out16 = p.vec16 && reinterpret_cast<uintptr_t>(out.raw()) % 16 == 0;
  kernel<<<grid, kMmaThreads, C::smem, s>>>(
      p, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()),
      w.defined() ? static_cast<const T*>(w.raw()) : nullptr, static_cast<T*>(out.raw()), lse.data<float>(), out16);
  MOE_KERNEL_CHECK();
}

template <class T>
void dispatch_fwd_mma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                      Tensor& out, Tensor& lse) {
  switch (padded_head_size(p.D)) {
    case 32: launch_fwd_mma<T, 32>(p, q, k, v, w, out, lse); break;
    case 64: launch_fwd_mma<T, 64>(p, q, k, v, w, out, lse); break;
    case 128: launch_fwd_mma<T, 128>(p, q, k, v, w, out, lse); break;
    default: launch_fwd_mma<T, 256>(p, q, k, v, w, out, lse); break;
  }
}
}  // namespace

void attention_forward_mma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& head_weight, Tensor& out, Tensor& lse) {
  if (q.dtype() == DType::bf16) dispatch_fwd_mma<__nv_bfloat16>(p, q, k, v, head_weight, out, lse);
  else dispatch_fwd_mma<__half>(p, q, k, v, head_weight, out, lse);
}

}  // namespace moe::cuda
