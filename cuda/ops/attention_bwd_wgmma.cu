// The Hopper attention backward (sm_90a, bf16/f16 in, f32 accumulation; FlashAttention-3's backward), the
// default on sm_90 for head sizes 64 and 128 without attention dropout (ops/kernel_variants.h). A block of 384
// threads owns 128 keys of one (batch, key head) and streams the (query head, 64-query tile) pairs that see
// them: warpgroup 0's elected thread loads K and V once and then Q and dO of each pair by TMA (64-element
// boxes of 128 bytes, 128-byte swizzle) into a 2-stage mbarrier ring; warpgroups 1 and 2 each own 64 of the
// keys and keep their dK and dV in registers. Per pair a warpgroup computes, transposed so that its keys are
// wgmma's M (both operands K-major from shared memory):
//   S^T = K Q^T and dP^T = V dO^T                      (wgmma m64n64k16)
//   P = 2^(s2 - lse2), s2 = scale log2(e) q.k          (lse from the forward; 0 for a row with no visible key)
//   dS = scale P (w dP - delta), delta = rowsum(dO o)  (attention_bwd.cu's pre-pass), dw += sum_keys P dP
//   dV += (w P)^T dO and dK += dS^T Q                  (wgmma m64nDk16, A the packed accumulators in registers,
//                                                       dO and Q MN-major from shared memory)
//   dQ part = dS K_wg                                  (wgmma m64n64k16, dS^T written swizzled to shared
//                                                       memory as the MN-major A, K MN-major)
// masked only on the tiles that need it (attention_mma.cuh's key_extent / visible_key). dQ is reduced
// through shared memory: each warpgroup stages its f32 part and adds it into the f32 accumulator dq_acc with
// one TMA reduce-add; the delta pre-pass zeroed dq_acc and the per-tile arrival counters, and the
// warpgroup whose reduce-add arrives last at a query tile (two per key block) adds the tile into dq, so
// neither a zero-fill launch nor a conversion pass remains. dK and dV are added into dk and dv from the
// registers. GQA: key head hk serves query heads hk group .. + group - 1. setmaxnreg gives the consumers
// the producer's registers. Semantics as attention.h; covered by tests/gpu/attention_parity_test.cpp (every
// Hopper case, on the emulator, which checks the wgmma, TMA, mbarrier and named-barrier protocol) and the
// SASS check of scripts/internal/kernel-sass.py (HGMMA).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attention_mma.cuh"
#include "attention_tma.cuh"
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/ptx.cuh"

namespace moe::cuda {
namespace {
using namespace attn;
using namespace attn::mma;
using ptx::Major;
using ptx::Swizzle;

constexpr int kBwdThreads = 384, kBK = 128, kBQ = 64;  // keys per block (64 per consumer warpgroup), query tile
constexpr int kLine = 128;                             // one swizzled line: 64 16-bit elements
constexpr int kStages = 2;

template <int D>
struct BwdWgTile {
  static constexpr int kChunks = D / 64;  // 64-element column chunks, one TMA box each
  static constexpr int kKBox = kBK * kLine, kQBox = kBQ * kLine;
  struct Shared {
    alignas(1024) uint8_t k[kChunks][kKBox];
    alignas(1024) uint8_t v[kChunks][kKBox];
    alignas(1024) uint8_t q[kStages][kChunks][kQBox];
    alignas(1024) uint8_t o[kStages][kChunks][kQBox];  // dO
    alignas(1024) uint8_t ds[2][64 * kLine];           // each consumer's dS^T: its 64 keys by the 64 queries
    alignas(128) float dq[2][kBQ * D];                 // each consumer's dQ part, the TMA reduce-add's source
    uint64_t kv_full, qo_full[kStages], qo_empty[kStages];
    float stats[2][kStages][3][kBQ];  // each consumer's lse2, delta and head weight of a tile's queries
    int pending[2][2];                // (head, q0) of a dQ tile a consumer adds into dq, or head -1
    int scratch[kBwdThreads / 16];    // key_extent's reduction
  };
};

/// The (query head, query tile) pairs a key block at k0 visits: query tiles from `begin` (causal: earlier
/// queries see none of its keys), `per_head` of them for each of the group's query heads.
struct QueryTiles {
  int begin, per_head, count;
  __device__ int head(int hk, int group, int it) const { return hk * group + it / per_head; }
  __device__ int row(int it) const { return begin + it % per_head * kBQ; }
};

__device__ QueryTiles query_tiles(const Params& p, int k0) {
  const int begin = p.causal ? max(0, k0 - (p.Tk - p.Tq)) / kBQ * kBQ : 0;
  const int per_head = begin < p.Tq ? (p.Tq - begin + kBQ - 1) / kBQ : 0;
  return {begin, per_head, per_head * p.group};
}

/// Warpgroup 0's elected thread: K and V of the block once, then Q and dO of every pair through the ring.
template <int D>
__device__ void produce(typename BwdWgTile<D>::Shared& s, const CUtensorMap& mq, const CUtensorMap& mk,
                        const CUtensorMap& mv, const CUtensorMap& mo, const Params& p, int hk, int b, int k0,
                        QueryTiles qt) {
  using C = BwdWgTile<D>;
  ptx::mbarrier_arrive_expect_tx(&s.kv_full, 2 * C::kChunks * C::kKBox);
#pragma unroll
  for (int c = 0; c < C::kChunks; ++c) {
    ptx::tma_load(s.k[c], &mk, &s.kv_full, 64 * c, hk, k0, b);
    ptx::tma_load(s.v[c], &mv, &s.kv_full, 64 * c, hk, k0, b);
  }
  for (int it = 0; it < qt.count; ++it) {
    const int st = it % kStages, h = qt.head(hk, p.group, it), q0 = qt.row(it);
    ptx::mbarrier_wait(&s.qo_empty[st], ((it / kStages) & 1) ^ 1);  // both consumers released it
    ptx::mbarrier_arrive_expect_tx(&s.qo_full[st], 2 * C::kChunks * C::kQBox);
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) {
      ptx::tma_load(s.q[st][c], &mq, &s.qo_full[st], 64 * c, h, q0, b);
      ptx::tma_load(s.o[st][c], &mo, &s.qo_full[st], 64 * c, h, q0, b);
    }
  }
}

struct Grads {  // the backward's outputs and workspaces (null where not wanted)
  float* dq_acc;
  int* dq_count;
  void* dq;
  float* dw_acc;
  void* dk;
  void* dv;
};

/// Warpgroups 1 and 2: keys k0 + 64 wg .. + 63. Accumulator layout (S^T, dP^T, dK, dV, dQ): thread (warp,
/// g = lane / 4, t = lane % 4) holds d[r] at row 16 warp + g + 8 ((r / 2) % 2), column 8 (r / 4) + 2t + r % 2;
/// for S^T and dP^T the rows are keys and the columns queries.
template <class T, int D>
__device__ void consume(const Params& p, typename BwdWgTile<D>::Shared& s, const CUtensorMap& mdq, const T* w,
                        const float* lse, const float* delta, const Grads& gr, int hk, int b, int k0, KeyExtent kv,
                        QueryTiles qt) {
  using C = BwdWgTile<D>;
  constexpr int NS = kBQ / 2, ND = D / 2;
  const int wg = threadIdx.x / 128 - 1, lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
  const int g = lane / 4, t4 = lane % 4;
  const int kw = k0 + 64 * wg, key0 = kw + 16 * warp + g;  // this thread's keys: key0 and key0 + 8
  const int off = p.Tk - p.Tq, nq = (p.Tq + kBQ - 1) / kBQ;
  T* dq = static_cast<T*>(gr.dq);
  float dk_acc[ND], dv_acc[ND];
#pragma unroll
  for (int r = 0; r < ND; ++r) dk_acc[r] = dv_acc[r] = 0.f;
  int prev_h = -1, prev_q0 = 0;  // the dQ tile of this warpgroup's last reduce-add

  // The previous reduce-add: completed and counted; the last of a tile's arrivals adds it into dq. Also frees
  // the dQ stage for this pair (every thread of the warpgroup passes the barrier).
  auto settle_previous = [&] {
    if (lt == 0) {
      int last = -1;
      if (prev_h >= 0) {
        ptx::bulk_wait<0>();
        ptx::fence_proxy_async_global();
        __threadfence();
        const int e = p.causal ? min(kv.end, prev_q0 + kBQ + off) : kv.end;  // key blocks below e see the tile
        const int expected = 2 * ((e + kBK - 1) / kBK);
        const int arrived = atomicAdd(gr.dq_count + ((long long)b * p.H + prev_h) * nq + prev_q0 / kBQ, 1) + 1;
        if (arrived == expected) last = prev_h;
      }
      s.pending[wg][0] = last, s.pending[wg][1] = prev_q0;
    }
    ptx::named_barrier_sync(1 + wg, 128);
    if (s.pending[wg][0] >= 0) add_dq_tile<T, 128>(p, dq, gr.dq_acc, b, s.pending[wg][0], s.pending[wg][1], kBQ, lt);
  };

  ptx::mbarrier_wait(&s.kv_full, 0);
  for (int it = 0; it < qt.count; ++it) {
    const int st = it % kStages, h = qt.head(hk, p.group, it), q0 = qt.row(it);
    ptx::mbarrier_wait(&s.qo_full[st], (it / kStages) & 1);
    float sc[NS], dp[NS];
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {  // k16 step kk: chunk kk / 4, 32 bytes per step inside it
      const int at = 64 * wg * kLine + (kk % 4) * 32;
      ptx::wgmma<kBQ, T, Major::K, Major::K>(
          sc, ptx::make_smem_desc(s.k[kk / 4] + at, 16, 1024, Swizzle::b128),
          ptx::make_smem_desc(s.q[st][kk / 4] + (kk % 4) * 32, 16, 1024, Swizzle::b128), kk > 0);
      ptx::wgmma<kBQ, T, Major::K, Major::K>(
          dp, ptx::make_smem_desc(s.v[kk / 4] + at, 16, 1024, Swizzle::b128),
          ptx::make_smem_desc(s.o[st][kk / 4] + (kk % 4) * 32, 16, 1024, Swizzle::b128), kk > 0);
    }
    ptx::wgmma_commit();
    // While they run, the tile's row statistics, one query column per thread of the first two warps, read back
    // by column below (after a barrier): lse2 = lse log2(e) (+inf for a row with no visible key or past Tq, so
    // that every p = 2^-inf = 0), delta and the head weight. One buffer per ring stage: stage st is written
    // again only after its Q and dO were refilled, i.e. after every consumer thread finished this tile.
    if (lt < kBQ) {
      const int i = q0 + lt;
      const bool ok = i < p.Tq;
      const long long row = ((long long)b * p.H + h) * p.Tq + i;
      const float L = ok ? lse[row] : -INFINITY;
      s.stats[wg][st][0][lt] = L == -INFINITY ? INFINITY : L * kLog2e;
      s.stats[wg][st][1][lt] = ok ? delta[row] : 0.f;
      s.stats[wg][st][2][lt] = ok ? head_weight(p, w, b, i, h) : 0.f;
    }
    ptx::wgmma_wait<0>();
    ptx::fence_registers(sc);
    ptx::fence_registers(dp);

    ptx::named_barrier_sync(1 + wg, 128);  // the statistics are written

    // P, dS and the head weights' gradient, masked only where this warp's 16 keys need it. Query column
    // x = 8 c + 2 t4 + e of the tile is accumulator element r = 4 c + 2 hr + e of rows key0 + 8 hr.
    const int wk = kw + 16 * warp;
    const bool masked = kv.general || wk + 16 > kv.end || (p.causal && wk + 15 > q0 + off);
#pragma unroll
    for (int ce = 0; ce < 16; ++ce) {
      const int x = 8 * (ce / 2) + 2 * t4 + ce % 2, i = q0 + x;
      const float lse2 = s.stats[wg][st][0][x], dl = s.stats[wg][st][1][x], wt = s.stats[wg][st][2][x];
      float dwp = 0.f;
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = 4 * (ce / 2) + 2 * hr + ce % 2;
        float pij = exp2f(sc[r] * p.scale_log2 - lse2);
        if (masked && !visible_key(p, kv, b, i, key0 + 8 * hr)) pij = 0.f;
        dwp += pij * dp[r];
        const float ds = pij * (wt * dp[r] - dl) * p.scale;
        sc[r] = pij * wt;
        dp[r] = ds;
      }
      if (gr.dw_acc) {  // sum over the warp's keys (the lanes of one t4), then over the warps by atomics
        dwp += __shfl_xor_sync(0xffffffffu, dwp, 4);
        dwp += __shfl_xor_sync(0xffffffffu, dwp, 8);
        dwp += __shfl_xor_sync(0xffffffffu, dwp, 16);
        if (g == 0 && i < p.Tq) atomicAdd(gr.dw_acc + ((long long)b * p.Tq + i) * p.H + h, dwp);
      }
    }
    // (w P)^T and dS^T as wgmma's A fragments: k16 step kk covers query columns 16 kk .. + 15.
    uint32_t pa[kBQ / 16][4], dsa[kBQ / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBQ / 16; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        pa[kk][i] = ptx::pack2<T>(sc[8 * kk + 2 * i], sc[8 * kk + 2 * i + 1]);
        dsa[kk][i] = ptx::pack2<T>(dp[8 * kk + 2 * i], dp[8 * kk + 2 * i + 1]);
      }
    if (gr.dq) {  // dS^T into this warpgroup's lines, swizzled: byte o of a line group moves to o ^ ((o >> 3) & 0x70)
#pragma unroll
      for (int c = 0; c < kBQ / 8; ++c)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int at = (16 * warp + g + 8 * hr) * kLine + (8 * c + 2 * t4) * 2;
          *reinterpret_cast<uint32_t*>(s.ds[wg] + (at ^ ((at >> 3) & 0x70))) =
              ptx::pack2<T>(dp[4 * c + 2 * hr], dp[4 * c + 2 * hr + 1]);
        }
      ptx::fence_proxy_async();
    }

    // dV += (w P)^T dO and dK += dS^T Q: dO and Q [query][d] are the MN-major B operands, 16 queries per step.
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBQ / 16; ++kk) {
      ptx::wgmma<D, T, Major::MN>(
          dv_acc, pa[kk], ptx::make_smem_desc(s.o[st][0] + kk * 16 * kLine, C::kQBox, 1024, Swizzle::b128), true);
      ptx::wgmma<D, T, Major::MN>(
          dk_acc, dsa[kk], ptx::make_smem_desc(s.q[st][0] + kk * 16 * kLine, C::kQBox, 1024, Swizzle::b128), true);
    }
    ptx::wgmma_commit();
    if (gr.dq) {
      settle_previous();  // also the barrier after which the whole dS^T is written
      // dQ part = dS K_wg, 64 columns at a time: A = dS^T [key][query] and B = K [key][d], both MN-major.
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c) {
        float acc[32];
        ptx::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 64 / 16; ++kk)
          ptx::wgmma<64, T, Major::MN, Major::MN>(
              acc, ptx::make_smem_desc(s.ds[wg] + kk * 16 * kLine, 64 * kLine, 1024, Swizzle::b128),
              ptx::make_smem_desc(s.k[c] + (64 * wg + 16 * kk) * kLine, C::kKBox, 1024, Swizzle::b128), kk > 0);
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        ptx::fence_registers(acc);
#pragma unroll
        for (int r = 0; r < 32; r += 2) {
          const int row = 16 * warp + g + 8 * ((r / 2) % 2), d = 64 * c + 8 * (r / 4) + 2 * t4;
          *reinterpret_cast<float2*>(&s.dq[wg][row * D + d]) = make_float2(acc[r], acc[r + 1]);
        }
      }
      ptx::fence_proxy_async();
      ptx::named_barrier_sync(1 + wg, 128);  // the stage is whole
      if (lt == 0) {
        ptx::tma_store<true>(&mdq, s.dq[wg], 0, h, q0, b);
        ptx::bulk_commit();
      }
      prev_h = h, prev_q0 = q0;
    }
    ptx::wgmma_wait<0>();
    ptx::fence_registers(dk_acc);
    ptx::fence_registers(dv_acc);
    ptx::mbarrier_arrive(&s.qo_empty[st]);  // Q and dO of this stage read
  }
  if (gr.dq) settle_previous();
  // dK, dV added into dk, dv (rows past Tk belong to no key).
  T* const dk = static_cast<T*>(gr.dk);
  T* const dv = static_cast<T*>(gr.dv);
#pragma unroll
  for (int r = 0; r < ND; r += 2) {
    const int j = key0 + 8 * ((r / 2) % 2), d = 8 * (r / 4) + 2 * t4;
    if (j >= p.Tk) continue;
    const long long gi = (((long long)b * p.Tk + j) * p.Hk + hk) * D + d;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (dk) dk[gi + e] = from_float<T>(to_float(dk[gi + e]) + dk_acc[r + e]);
      if (dv) dv[gi + e] = from_float<T>(to_float(dv[gi + e]) + dv_acc[r + e]);
    }
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kBwdThreads, 1)
    attention_bwd_wgmma_kernel(Params p, const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                               const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mo,
                               const __grid_constant__ CUtensorMap mdq, const T* __restrict__ w,
                               const float* __restrict__ lse, const float* __restrict__ delta, Grads gr) {
  using C = BwdWgTile<D>;
  extern __shared__ __align__(1024) unsigned char attn_bwd_wgmma_smem[];
  auto& s = *reinterpret_cast<typename C::Shared*>(attn_bwd_wgmma_smem);
  const int hk = blockIdx.x % p.Hk, b = blockIdx.x / p.Hk, k0 = blockIdx.y * kBK;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&s.kv_full, 1);
    for (int i = 0; i < kStages; ++i) ptx::mbarrier_init(&s.qo_full[i], 1), ptx::mbarrier_init(&s.qo_empty[i], 256);
    ptx::fence_mbarrier_init();
  }
  const KeyExtent kv = key_extent<kBwdThreads>(p, b, s.scratch);
  __syncthreads();  // publishes the mbarriers (key_extent has a barrier only with a padding mask)
  const QueryTiles qt = query_tiles(p, k0);
  if (k0 >= kv.end || qt.count == 0) return;  // uniform: no visible pair, no gradient, no dQ arrival
  if (threadIdx.x < 128) {
    ptx::setmaxnreg<24, false>();
    if (threadIdx.x < 32 && ptx::elect_one()) produce<D>(s, mq, mk, mv, mo, p, hk, b, k0, qt);
  } else {
    ptx::setmaxnreg<240, true>();
    consume<T, D>(p, s, mdq, w, lse, delta, gr, hk, b, k0, kv, qt);
  }
}

template <class T, int D>
void launch_bwd_wgmma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                      const Tensor& dout, const Tensor& lse, const Tensor& delta, const Grads& gr) {
  using Shared = typename BwdWgTile<D>::Shared;
  auto kernel = attention_bwd_wgmma_kernel<T, D>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Shared))));
  const CUtensorMap mq = operand_map<T>(q.raw(), p, p.Tq, p.H, kBQ), mo = operand_map<T>(dout.raw(), p, p.Tq, p.H, kBQ),
                    mk = operand_map<T>(k.raw(), p, p.Tk, p.Hk, kBK), mv = operand_map<T>(v.raw(), p, p.Tk, p.Hk, kBK);
  const CUtensorMap mdq =
      gr.dq ? head_map(gr.dq_acc, p, p.Tq, p.H, D, kBQ, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, CU_TENSOR_MAP_SWIZZLE_NONE)
            : CUtensorMap{};
  const dim3 grid(unsigned(p.B) * unsigned(p.Hk), (p.Tk + kBK - 1) / kBK);
  kernel<<<grid, kBwdThreads, sizeof(Shared), s>>>(p, mq, mk, mv, mo, mdq,
                                                   w.defined() ? static_cast<const T*>(w.raw()) : nullptr,
                                                   lse.data<float>(), delta.data<float>(), gr);
  MOE_KERNEL_CHECK();
}
}  // namespace

bool attention_backward_wgmma_fits(const attn::Params& p) {
  return (p.D == 64 || p.D == 128) && p.drop.rate == 0.f && p.vec16;
}

void attention_backward_wgmma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                              Tensor& dq_acc, Tensor& dq_count, Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv) {
  MOE_CHECK(attention_backward_wgmma_fits(p), "attention_backward_wgmma: head size ", p.D,
            " or operands it does not take");
  MOE_CHECK(attention_backward_mma_query_tile() == kBQ, "attention_backward_wgmma: dQ tiles of the arrival counters");
  const bool grad_q = dq.defined();
  const Grads gr{grad_q ? dq_acc.data<float>() : nullptr,
                 grad_q ? dq_count.data<int32_t>() : nullptr,
                 grad_q ? dq.raw() : nullptr,
                 dw_acc.defined() ? dw_acc.data<float>() : nullptr,
                 dk.defined() ? dk.raw() : nullptr,
                 dv.defined() ? dv.raw() : nullptr};
  const bool bf16 = q.dtype() == DType::bf16;
  if (p.D == 64) {
    if (bf16)
      launch_bwd_wgmma<__nv_bfloat16, 64>(p, q, k, v, head_weight, dout, lse, delta, gr);
    else
      launch_bwd_wgmma<__half, 64>(p, q, k, v, head_weight, dout, lse, delta, gr);
  } else {
    if (bf16)
      launch_bwd_wgmma<__nv_bfloat16, 128>(p, q, k, v, head_weight, dout, lse, delta, gr);
    else
      launch_bwd_wgmma<__half, 128>(p, q, k, v, head_weight, dout, lse, delta, gr);
  }
}

}  // namespace moe::cuda
