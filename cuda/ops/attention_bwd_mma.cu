// The mma.sync attention backward for bf16/f16 on sm_80+ (FlashAttention-2's schedule), the default on
// those GPUs (ops/kernel_variants.h). A block of 4 warps owns BK keys of one key head and keeps their
// dK and dV in registers (warp: 16 keys by DP / (4 / (BK / 16)) columns) while it streams the
// (query head, 64-query tile) pairs that see them, Q and dO double-buffered through cp.async. Per pair
// each warp takes 16 query rows: S = Q K^T and dP = dO V^T with mma.m16n8k16 (ldmatrix operands), then
// in registers p = 2^(s2 - lse2) (lse from the forward; 0 for a row with no visible key), masked only on
// tiles that need it, z = keep() (the forward's dropout factor), wzP and
// dS = scale p (w z dP - delta) (delta = rowsum(dO o), attention_bwd.cu's pre-pass),
// dw += sum_j p z dP (f32 atomics). dQ = dS K takes dS straight from the accumulators as its A operand
// (K by ldmatrix.trans) and adds into an f32 accumulator with atomics; the pre-pass zeroed it, and the
// last key block to add into a query tile (a per-tile arrival counter) adds the tile into dq itself, so
// no zero-fill launch and no conversion pass remain. wzP and dS go through shared memory, read back
// transposed (ldmatrix.trans) for dV += (wzP)^T dO and dK += dS^T Q. dK and dV are added into dk and dv
// through a staged, coalesced epilogue. Covered by tests/gpu/attention_parity_test.cpp (every variant).
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
struct BwdMmaTile {
  static constexpr int BQ = 16 * kMmaWarps, BK = DP <= 64 ? 64 : DP == 128 ? 32 : 16;
  static constexpr int LD = DP + 8, LP = BK + 8, LO = DP + 4;  // padded rows: Q/dO/K/V, P/dS, f32 dK/dV stage
  // dK/dV: warp w owns keys 16 (w % kKeyTiles) and columns DW (w / kKeyTiles) .. + DW.
  static constexpr int kKeyTiles = BK / 16, DW = DP / (kMmaWarps / kKeyTiles);
  static constexpr int DQC = DP < 64 ? DP : 64;  // dQ columns per pass (bounds the accumulator registers)
  static constexpr size_t kv_elems = 2 * size_t(BK) * LD, qo_elems = 2 * 2 * size_t(BQ) * LD;
  static constexpr size_t p_elems = 2 * size_t(BQ) * LP;
  static constexpr size_t bytes = 2 * (kv_elems + qo_elems + p_elems);
  static constexpr size_t smem = bytes + (2 * kMmaWarps + 2) * sizeof(int);
  static_assert(2 * size_t(BK) * LO * sizeof(float) <= 2 * qo_elems, "the dK/dV stage fits the Q/dO buffers");
  static_assert(kMmaWarps % kKeyTiles == 0 && DW % 16 == 0, "dK/dV tiles split over the warps");
};

template <class T, int DP>
__global__ void __launch_bounds__(kMmaThreads)
    attention_bwd_mma_kernel(Params p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                             const T* __restrict__ w, const T* __restrict__ dout, const float* __restrict__ lse,
                             const float* __restrict__ delta, float* __restrict__ dq_acc, int* __restrict__ dq_count,
                             T* __restrict__ dq, float* __restrict__ dw_acc, T* __restrict__ dk, T* __restrict__ dv) {
  using C = BwdMmaTile<DP>;
  constexpr int BQ = C::BQ, BK = C::BK, LD = C::LD, LP = C::LP, LO = C::LO, NK = BK / 8, KD = DP / 16;
  constexpr int DW = C::DW, DQC = C::DQC;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + BK * LD;
  T* sQO = sV + BK * LD;  // stage s: Q at sQO + 2 s BQ LD, dO after it
  T* sP = sQO + 2 * 2 * BQ * LD;
  T* sDS = sP + BQ * LP;
  int* scratch = reinterpret_cast<int*>(smem_raw + C::bytes);
  int* pending = scratch + 2 * kMmaWarps;  // (head, q0) of a dQ tile this block adds into dq, or head -1
  const int hk = blockIdx.x % p.Hk, b = blockIdx.x / p.Hk, k0 = blockIdx.y * BK;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const int off = p.Tk - p.Tq;

  const KeyExtent kv = key_extent(p, b, scratch);
  // Query i sees key k0 only if k0 <= i + off: earlier query tiles see none of this key tile.
  const int q_begin = p.causal ? max(0, k0 - off) / BQ * BQ : 0;
  const int nqv = q_begin < p.Tq ? (p.Tq - q_begin + BQ - 1) / BQ : 0, n_it = nqv * p.group;
  if (k0 >= kv.end || n_it == 0) return;  // uniform: no visible pair, no gradient, no dQ arrival
  const int nq = (p.Tq + BQ - 1) / BQ;

  auto load_qo = [&](int it) {
    if (it < n_it) {
      const int h = hk * p.group + it / nqv, q0 = q_begin + it % nqv * BQ;
      T* st = sQO + (it % 2) * 2 * BQ * LD;
      load_rows<T, BQ, DP, LD>(st, q, b, q0, p.Tq, p.H, h, p.D, p.vec16);
      load_rows<T, BQ, DP, LD>(st + BQ * LD, dout, b, q0, p.Tq, p.H, h, p.D, p.vec16);
    }
    ptx::cp_async_commit();
  };
  load_rows<T, BK, DP, LD>(sK, k, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
  load_rows<T, BK, DP, LD>(sV, v, b, k0, p.Tk, p.Hk, hk, p.D, p.vec16);
  load_qo(0);  // K, V and the first Q/dO: one group
  if (tid == 0) pending[0] = -1;

  const int km = warp % C::kKeyTiles, dcol = warp / C::kKeyTiles * DW;
  float dk_acc[DW / 8][4], dv_acc[DW / 8][4];
#pragma unroll
  for (int n = 0; n < DW / 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) dk_acc[n][i] = dv_acc[n][i] = 0.f;

  for (int it = 0; it < n_it; ++it) {
    ptx::cp_async_wait<0>();  // this pair's Q/dO (and K, V) landed for this thread's copies ...
    __syncthreads();          // ... and everyone's; P/dS and the other stage are free again
    if (pending[0] >= 0) add_dq_tile(p, dq, dq_acc, b, pending[0], pending[1], BQ, tid);
    load_qo(it + 1);
    const int h = hk * p.group + it / nqv, q0 = q_begin + it % nqv * BQ;
    const T* sQ = sQO + (it % 2) * 2 * BQ * LD;
    const T* sO = sQ + BQ * LD;
    const int row0 = q0 + warp * 16 + g;
    float lse2[2], dl[2], wt[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + 8 * r;
      const bool ok = i < p.Tq;
      const long long row = ((long long)b * p.H + h) * p.Tq + i;
      const float L = ok ? lse[row] : -INFINITY;
      lse2[r] = L == -INFINITY ? INFINITY : L * kLog2e;  // no visible key: every p = 2^-inf = 0
      dl[r] = ok ? delta[row] : 0.f;
      wt[r] = ok ? head_weight(p, w, b, i, h) : 0.f;
    }
    // S = Q K^T, dP = dO V^T on this warp's 16 rows.
    float s[NK][4], dp[NK][4];
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) s[n][i] = dp[n][i] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      uint32_t aq[4], ao[4];
      ldsm_a(aq, sQ + warp * 16 * LD + kk * 16, LD);
      ldsm_a(ao, sO + warp * 16 * LD + kk * 16, LD);
#pragma unroll
      for (int n = 0; n < NK; n += 2) {
        uint32_t bb[2][2];
        ldsm_b(bb, sK + n * 8 * LD + kk * 16, LD);
        ptx::mma_m16n8k16<T>(s[n], aq, bb[0], s[n]);
        ptx::mma_m16n8k16<T>(s[n + 1], aq, bb[1], s[n + 1]);
        ldsm_b(bb, sV + n * 8 * LD + kk * 16, LD);
        ptx::mma_m16n8k16<T>(dp[n], ao, bb[0], dp[n]);
        ptx::mma_m16n8k16<T>(dp[n + 1], ao, bb[1], dp[n + 1]);
      }
    }
    const bool masked = kv.general || k0 + BK > kv.end || (p.causal && k0 + BK - 1 > row0 - g + off);
    float dwp[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i / 2, row = row0 + 8 * r, j = k0 + 8 * n + 2 * t4 + i % 2;
        float pij = exp2f(s[n][i] * p.scale_log2 - lse2[r]);
        if (masked && !visible_key(p, kv, b, row, j)) pij = 0.f;
        const float z = p.drop.rate > 0.f && pij != 0.f ? keep(p, b, h, row, j) : 1.f;
        dwp[r] += pij * z * dp[n][i];
        const float ds = pij * (wt[r] * z * dp[n][i] - dl[r]) * p.scale;
        s[n][i] = pij * z * wt[r];
        dp[n][i] = ds;
      }
    T* sPw = sP + warp * 16 * LP;
    T* sDSw = sDS + warp * 16 * LP;
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int at = (g + 8 * r) * LP + 8 * n + 2 * t4;
        *reinterpret_cast<uint32_t*>(sPw + at) = ptx::pack2<T>(s[n][2 * r], s[n][2 * r + 1]);
        *reinterpret_cast<uint32_t*>(sDSw + at) = ptx::pack2<T>(dp[n][2 * r], dp[n][2 * r + 1]);
      }
    if (dw_acc) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float sum = quad_sum(dwp[r]);
        if (t4 == 0 && row0 + 8 * r < p.Tq) atomicAdd(dw_acc + ((long long)b * p.Tq + row0 + 8 * r) * p.H + h, sum);
      }
    }
    if (dq_acc) {  // dQ = dS K, dS from the accumulators, K [key][d] read transposed
      uint32_t dsa[BK / 16][4];
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) acc_to_a<T>(dsa[kk], dp, kk);
#pragma unroll
      for (int c0 = 0; c0 < DP; c0 += DQC) {
        float acc[DQC / 8][4];
#pragma unroll
        for (int n = 0; n < DQC / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
          for (int n = 0; n < DQC / 8; n += 2) {
            uint32_t bb[2][2];
            ldsm_b_trans(bb, sK + kk * 16 * LD + c0 + n * 8, LD);
            ptx::mma_m16n8k16<T>(acc[n], dsa[kk], bb[0], acc[n]);
            ptx::mma_m16n8k16<T>(acc[n + 1], dsa[kk], bb[1], acc[n + 1]);
          }
#pragma unroll
        for (int n = 0; n < DQC / 8; ++n)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int row = row0 + 8 * (i / 2), d = c0 + 8 * n + 2 * t4 + i % 2;
            if (row < p.Tq && d < p.D) atomicAdd(dq_acc + (((long long)b * p.Tq + row) * p.H + h) * p.D + d, acc[n][i]);
          }
      }
      __threadfence();  // this thread's adds are visible before the arrival below counts them
    }
    __syncthreads();  // P, dS written; every dQ add of this pair fenced
    if (dq_acc && tid == 0) {
      // Arrivals expected at this dQ tile: the key tiles kt with kt BK < kv.end that see a row of it.
      const int e = p.causal ? min(kv.end, q0 + BQ + off) : kv.end;
      const int expected = e > 0 ? (e + BK - 1) / BK : 0;
      const int arrived = atomicAdd(dq_count + ((long long)b * p.H + h) * nq + q0 / BQ, 1) + 1;
      pending[0] = arrived == expected ? h : -1, pending[1] = q0;  // the last one adds the tile (next barrier)
    }
    // dV += (wzP)^T dO and dK += dS^T Q: this warp's 16 keys and DW columns, k over the 64 queries.
#pragma unroll
    for (int kk = 0; kk < BQ / 16; ++kk) {
      uint32_t ap[4], ads[4];
      ldsm_a_trans(ap, sP + kk * 16 * LP + km * 16, LP);
      ldsm_a_trans(ads, sDS + kk * 16 * LP + km * 16, LP);
#pragma unroll
      for (int n = 0; n < DW / 8; n += 2) {
        uint32_t bb[2][2];
        ldsm_b_trans(bb, sO + kk * 16 * LD + dcol + n * 8, LD);
        ptx::mma_m16n8k16<T>(dv_acc[n], ap, bb[0], dv_acc[n]);
        ptx::mma_m16n8k16<T>(dv_acc[n + 1], ap, bb[1], dv_acc[n + 1]);
        ldsm_b_trans(bb, sQ + kk * 16 * LD + dcol + n * 8, LD);
        ptx::mma_m16n8k16<T>(dk_acc[n], ads, bb[0], dk_acc[n]);
        ptx::mma_m16n8k16<T>(dk_acc[n + 1], ads, bb[1], dk_acc[n + 1]);
      }
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // the last pair's reads of Q/dO done; `pending` final
  if (pending[0] >= 0) add_dq_tile(p, dq, dq_acc, b, pending[0], pending[1], BQ, tid);

  // dK, dV: staged as f32 in the Q/dO buffers, then added into dk, dv (coalesced over d).
  float* stage_k = reinterpret_cast<float*>(sQO);
  float* stage_v = stage_k + BK * LO;
#pragma unroll
  for (int n = 0; n < DW / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int at = (km * 16 + g + 8 * r) * LO + dcol + 8 * n + 2 * t4;
      *reinterpret_cast<float2*>(stage_k + at) = make_float2(dk_acc[n][2 * r], dk_acc[n][2 * r + 1]);
      *reinterpret_cast<float2*>(stage_v + at) = make_float2(dv_acc[n][2 * r], dv_acc[n][2 * r + 1]);
    }
  __syncthreads();
  for (int idx = tid; idx < BK * p.D; idx += kMmaThreads) {
    const int r = idx / p.D, d = idx % p.D, j = k0 + r;
    if (j >= p.Tk) break;
    const long long gi = (((long long)b * p.Tk + j) * p.Hk + hk) * p.D + d;
    if (dk) dk[gi] = from_float<T>(to_float(dk[gi]) + stage_k[r * LO + d]);
    if (dv) dv[gi] = from_float<T>(to_float(dv[gi]) + stage_v[r * LO + d]);
  }
}

template <class T, int DP>
void launch_bwd_mma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                    const Tensor& dout, const Tensor& lse, const Tensor& delta, Tensor& dq_acc, Tensor& dq_count,
                    Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv) {
  using C = BwdMmaTile<DP>;
  auto kernel = attention_bwd_mma_kernel<T, DP>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::smem)));
  const dim3 grid(unsigned(p.B) * unsigned(p.Hk), (p.Tk + C::BK - 1) / C::BK);
  const bool grad_q = dq.defined();
  kernel<<<grid, kMmaThreads, C::smem, s>>>(
      p, static_cast<const T*>(q.raw()), static_cast<const T*>(k.raw()), static_cast<const T*>(v.raw()),
      w.defined() ? static_cast<const T*>(w.raw()) : nullptr, static_cast<const T*>(dout.raw()), lse.data<float>(),
      delta.data<float>(), grad_q ? dq_acc.data<float>() : nullptr, grad_q ? dq_count.data<int32_t>() : nullptr,
      grad_q ? static_cast<T*>(dq.raw()) : nullptr, dw_acc.defined() ? dw_acc.data<float>() : nullptr,
      dk.defined() ? static_cast<T*>(dk.raw()) : nullptr, dv.defined() ? static_cast<T*>(dv.raw()) : nullptr);
  MOE_KERNEL_CHECK();
}

template <class T>
void dispatch_bwd_mma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                      const Tensor& dout, const Tensor& lse, const Tensor& delta, Tensor& dq_acc, Tensor& dq_count,
                      Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv) {
  switch (padded_head_size(p.D)) {
    case 32: launch_bwd_mma<T, 32>(p, q, k, v, w, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv); break;
    case 64: launch_bwd_mma<T, 64>(p, q, k, v, w, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv); break;
    case 128: launch_bwd_mma<T, 128>(p, q, k, v, w, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv); break;
    default: launch_bwd_mma<T, 256>(p, q, k, v, w, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv); break;
  }
}
}  // namespace

int attention_backward_mma_query_tile() { return 16 * kMmaWarps; }

void attention_backward_mma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                            Tensor& dq_acc, Tensor& dq_count, Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv) {
  if (q.dtype() == DType::bf16)
    dispatch_bwd_mma<__nv_bfloat16>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv);
  else dispatch_bwd_mma<__half>(p, q, k, v, head_weight, dout, lse, delta, dq_acc, dq_count, dq, dw_acc, dk, dv);
}

}  // namespace moe::cuda
