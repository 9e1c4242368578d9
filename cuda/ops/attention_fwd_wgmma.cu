// The Hopper attention forward (sm_90a, bf16/f16 in, f32 accumulation; FlashAttention-3's structure), the
// default on sm_90 for head sizes 64 and 128 (ops/kernel_variants.h). A block of 384 threads owns 128
// query rows of one (batch, head), the causal grid heaviest tiles first. Warpgroup 0 is the producer:
// one elected thread loads Q once and then, per tile of 128 keys, K and V by TMA (64-element boxes of
// 128 bytes, 128-byte swizzle) into a ring of 2 (D = 128) or 3 (D = 64) stages; K and V each have their
// own full and empty mbarriers, so S = Q K^T starts before V lands and K is refilled before V is free.
// Warpgroups 1 and 2 each own 64 query rows: S = Q K^T by wgmma m64n128k16 straight from shared memory
// (both operands K-major), scaled into the base-2 domain (s2 = scale log2(e) q.k), masked only on tiles
// that need it (the causal diagonal, the tile holding the end of the keys, every tile of a padding mask
// that is not a prefix: attention_mma.cuh's key_extent / visible_key), then the online softmax in
// registers: row max m and sum l over the quad of lanes holding a row, alpha = 2^(m_old - m_new),
// P = 2^(s2 - m_new) packed to 16 bits as the register A operand of O += P V (wgmma m64nDk16, V MN-major
// from shared memory). Per tile j a warpgroup issues S_j and O = alpha_{j-1} O + P_{j-1} V_{j-1} together
// and runs the softmax of S_j while the second product runs (FlashAttention-3's intra-warpgroup overlap);
// the two warpgroups take turns issuing (named barriers 1 and 2), so one's softmax hides under the
// other's wgmmas (the ping-pong). out = w O / l (0 for a row with no visible key) is written into the
// warpgroup's own Q lines (swizzled) and stored by TMA, which clips rows past Tq; lse = (m + log2 l) ln 2
// (-inf for such a row). GQA: query head h reads key head h / (H / Hk). setmaxnreg gives the consumers
// the producer's registers. The dispatch (attention_fwd.cu) sends here only calls without attention
// dropout whose q, k, v and out move by TMA; everything else runs the mma.sync kernel. Semantics as
// attention.h; covered by tests/gpu/attention_parity_test.cpp (every variant, on the emulator, which
// checks the wgmma, TMA, mbarrier and named-barrier protocol) and the SASS check of
// scripts/internal/kernel-sass.py (HGMMA).
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

constexpr int kWgThreads = 384, kBQ = 128, kBK = 128;
constexpr int kRowBytes = 128;  // one swizzled line: 64 16-bit elements, one TMA box wide

template <int D>
struct WgTile {
  static constexpr int kStages = D <= 64 ? 3 : 2;
  static constexpr int kChunks = D / 64;  // 64-element column chunks, one TMA box each
  static constexpr int kQBox = kBQ * kRowBytes, kKBox = kBK * kRowBytes;
  struct Shared {
    alignas(1024) uint8_t q[kChunks][kQBox];  // Q; at the end each warpgroup's O in its own 64 rows
    alignas(1024) uint8_t k[kStages][kChunks][kKBox];
    alignas(1024) uint8_t v[kStages][kChunks][kKBox];
    uint64_t q_full, k_full[kStages], v_full[kStages], k_empty[kStages], v_empty[kStages];
    int scratch[kWgThreads / 16];  // key_extent's reduction
  };
};

/// Warpgroup 0's elected thread: Q, then K and V of every key tile through the ring.
template <int D>
__device__ void produce(typename WgTile<D>::Shared& s, const CUtensorMap& mq, const CUtensorMap& mk,
                        const CUtensorMap& mv, int h, int hk, int b, int q0, int n_tiles) {
  using C = WgTile<D>;
  if (n_tiles == 0) return;  // no key to see: the consumers write zeros and never wait
  ptx::mbarrier_arrive_expect_tx(&s.q_full, C::kChunks * C::kQBox);
#pragma unroll
  for (int c = 0; c < C::kChunks; ++c) ptx::tma_load(s.q[c], &mq, &s.q_full, 64 * c, h, q0, b);
  for (int it = 0; it < n_tiles; ++it) {
    const int st = it % C::kStages;
    const unsigned phase = (it / C::kStages) & 1;
    ptx::mbarrier_wait(&s.k_empty[st], phase ^ 1);  // both consumers released it (the first round passes)
    ptx::mbarrier_arrive_expect_tx(&s.k_full[st], C::kChunks * C::kKBox);
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) ptx::tma_load(s.k[st][c], &mk, &s.k_full[st], 64 * c, hk, it * kBK, b);
    ptx::mbarrier_wait(&s.v_empty[st], phase ^ 1);
    ptx::mbarrier_arrive_expect_tx(&s.v_full[st], C::kChunks * C::kKBox);
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) ptx::tma_load(s.v[st][c], &mv, &s.v_full[st], 64 * c, hk, it * kBK, b);
  }
}

/// Warpgroups 1 and 2: query rows q0 + 64 wg .. + 63. Accumulator layout (both S and O): thread (warp,
/// g = lane / 4, t = lane % 4) holds d[r] at row 16 warp + g + 8 ((r / 2) % 2), column 8 (r / 4) + 2t + r % 2.
/// Per key tile j the warpgroup issues S_j = Q K_j^T and O += P_{j-1} V_{j-1} together (O first rescaled to
/// tile j-1's row max), runs the softmax of S_j while the second product is in flight, then packs P_j. The
/// two warpgroups take turns issuing (named barriers 1 and 2), so one's softmax overlaps the other's wgmmas.
template <class T, int D>
__device__ void consume(const Params& p, typename WgTile<D>::Shared& s, const CUtensorMap& mo, const T* w, float* lse,
                        int h, int b, int q0, KeyExtent kv, int n_tiles) {
  using C = WgTile<D>;
  constexpr int S = C::kStages, NS = kBK / 2, NO = D / 2;
  const int wg = threadIdx.x / 128 - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4;
  const int row0 = q0 + 64 * wg + 16 * warp + g;  // this thread's rows: row0 and row0 + 8
  const int off = p.Tk - p.Tq;                    // query i sees keys j <= i + off (causal)
  float o[NO], sc[NS];
#pragma unroll
  for (int r = 0; r < NO; ++r) o[r] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2] = {0.f, 0.f};  // l: this lane's columns only
  uint32_t pa[kBK / 16][4];  // P of the previous tile as wgmma's A fragments

  auto issue_s = [&](int st) {  // k16 step kk: chunk kk / 4, 32 bytes per step inside it
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint64_t da =
          ptx::make_smem_desc(s.q[kk / 4] + 64 * wg * kRowBytes + (kk % 4) * 32, 16, 1024, Swizzle::b128);
      const uint64_t db = ptx::make_smem_desc(s.k[st][kk / 4] + (kk % 4) * 32, 16, 1024, Swizzle::b128);
      ptx::wgmma<kBK, T, Major::K, Major::K>(sc, da, db, kk > 0);
    }
    ptx::wgmma_commit();
  };
  auto issue_pv = [&](int st) {  // V [key][d] is the MN-major B operand, 16 keys (2 KiB of lines) per step
#pragma unroll
    for (int r = 0; r < NO; ++r) o[r] *= alpha[(r / 2) % 2];  // O to the row max of the tile P belongs to
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const uint64_t db = ptx::make_smem_desc(s.v[st][0] + kk * 16 * kRowBytes, C::kKBox, 1024, Swizzle::b128);
      ptx::wgmma<D, T, Major::MN>(o, pa[kk], db, true);
    }
    ptx::wgmma_commit();
  };
  // Scale into the base-2 domain, mask, new row max over the quad, alpha = 2^(m_old - m_new), l rescaled
  // and increased, sc = 2^(s2 - m_new).
  auto softmax = [&](int k0) {
#pragma unroll
    for (int r = 0; r < NS; ++r) sc[r] *= p.scale_log2;
    if (kv.general || k0 + kBK > kv.end || (p.causal && k0 + kBK - 1 > row0 - g + off)) {  // this warp's rows
#pragma unroll
      for (int r = 0; r < NS; ++r)
        if (!visible_key(p, kv, b, row0 + 8 * ((r / 2) % 2), k0 + 8 * (r / 4) + 2 * t4 + r % 2)) sc[r] = -INFINITY;
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float mx = m[hr];
#pragma unroll
      for (int c = 0; c < kBK / 8; ++c) mx = fmaxf(mx, fmaxf(sc[4 * c + 2 * hr], sc[4 * c + 2 * hr + 1]));
      mx = quad_max(mx);
      const float mu = mx == -INFINITY ? 0.f : mx;  // nothing visible yet: every p is 2^-inf = 0
      alpha[hr] = exp2f(m[hr] - mu);
      m[hr] = mx, l[hr] *= alpha[hr];
#pragma unroll
      for (int c = 0; c < kBK / 8; ++c) {
        float& e0 = sc[4 * c + 2 * hr];
        float& e1 = sc[4 * c + 2 * hr + 1];
        e0 = exp2f(e0 - mu), e1 = exp2f(e1 - mu);
        l[hr] += e0 + e1;
      }
    }
  };

  if (n_tiles > 0) {
    ptx::mbarrier_wait(&s.q_full, 0);
    if (wg == 1) ptx::named_barrier_arrive(1, 256);  // warpgroup 0 issues first
  }
  for (int it = 0; it < n_tiles; ++it) {
    const int st = it % S, pst = (it + S - 1) % S;  // this tile's stage and the previous tile's
    ptx::mbarrier_wait(&s.k_full[st], (it / S) & 1);
    ptx::named_barrier_sync(1 + wg, 256);  // this warpgroup's turn to issue
    issue_s(st);
    if (it > 0) {
      ptx::mbarrier_wait(&s.v_full[pst], ((it - 1) / S) & 1);
      issue_pv(pst);
    }
    if (wg == 0 || it + 1 < n_tiles) ptx::named_barrier_arrive(2 - wg, 256);  // the other's turn
    // S_j has landed; P_{j-1} V_{j-1} may still run.
    if (it > 0) ptx::wgmma_wait<1>();
    else ptx::wgmma_wait<0>();
    ptx::fence_registers(sc);
    ptx::mbarrier_arrive(&s.k_empty[st]);  // K_j read: the producer may refill it
    softmax(it * kBK);
    if (it > 0) {
      ptx::wgmma_wait<0>();
      ptx::fence_registers(o);
      ptx::mbarrier_arrive(&s.v_empty[pst]);
    }
    // P_j as wgmma's A fragments: k16 step kk covers S columns 16 kk .. + 15, i.e. sc[8 kk .. 8 kk + 7].
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) pa[kk][i] = ptx::pack2<T>(sc[8 * kk + 2 * i], sc[8 * kk + 2 * i + 1]);
  }
  if (n_tiles > 0) {  // the last tile's O += P V
    const int st = (n_tiles - 1) % S;
    ptx::mbarrier_wait(&s.v_full[st], ((n_tiles - 1) / S) & 1);
    issue_pv(st);
    ptx::wgmma_wait<0>();
    ptx::fence_registers(o);
    ptx::mbarrier_arrive(&s.v_empty[st]);
  }

  float f[2];
  row_factors(p, w, b, h, row0, t4, m, l, f, lse);
  // O into this warpgroup's Q lines (every wgmma that read them has completed), in the swizzled layout
  // the TMA store reads: byte o of a line group moves to o ^ ((o >> 3) & 0x70).
  ptx::named_barrier_sync(3 + wg, 128);
#pragma unroll
  for (int c = 0; c < D / 8; ++c)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int line = 16 * warp + g + 8 * hr, at = line * kRowBytes + (8 * (c % 8) + 2 * t4) * 2;
      *reinterpret_cast<uint32_t*>(s.q[c / 8] + 64 * wg * kRowBytes + (at ^ ((at >> 3) & 0x70))) =
          ptx::pack2<T>(o[4 * c + 2 * hr] * f[hr], o[4 * c + 2 * hr + 1] * f[hr]);
    }
  ptx::fence_proxy_async();
  ptx::named_barrier_sync(3 + wg, 128);
  if (threadIdx.x % 128 == 0 && q0 + 64 * wg < p.Tq) {
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c)
      ptx::tma_store<false>(&mo, s.q[c] + 64 * wg * kRowBytes, 64 * c, h, q0 + 64 * wg, b);
    ptx::bulk_commit();
    ptx::bulk_wait<0>();
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kWgThreads, 1)
    attention_fwd_wgmma_kernel(Params p, const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                               const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mo,
                               const T* __restrict__ w, float* __restrict__ lse) {
  using C = WgTile<D>;
  extern __shared__ __align__(1024) unsigned char attn_wgmma_smem[];
  auto& s = *reinterpret_cast<typename C::Shared*>(attn_wgmma_smem);
  const int h = blockIdx.x % p.H, b = blockIdx.x / p.H, hk = h / p.group;
  const int q0 = (p.causal ? gridDim.y - 1 - blockIdx.y : blockIdx.y) * kBQ;  // causal: heaviest tiles first
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&s.q_full, 1);
    for (int i = 0; i < C::kStages; ++i) {
      ptx::mbarrier_init(&s.k_full[i], 1), ptx::mbarrier_init(&s.v_full[i], 1);
      ptx::mbarrier_init(&s.k_empty[i], 256), ptx::mbarrier_init(&s.v_empty[i], 256);
    }
    ptx::fence_mbarrier_init();
  }
  const KeyExtent kv = key_extent<kWgThreads>(p, b, s.scratch);
  __syncthreads();  // publishes the mbarriers (key_extent has a barrier only with a padding mask)
  const int k_end = p.causal ? min(kv.end, q0 + kBQ + p.Tk - p.Tq) : kv.end;
  const int n_tiles = k_end > 0 ? (k_end + kBK - 1) / kBK : 0;
  if (threadIdx.x < 128) {
    ptx::setmaxnreg<24, false>();
    if (threadIdx.x < 32 && ptx::elect_one()) produce<D>(s, mq, mk, mv, h, hk, b, q0, n_tiles);
  } else {
    ptx::setmaxnreg<240, true>();
    consume<T, D>(p, s, mo, w, lse, h, b, q0, kv, n_tiles);
  }
}

template <class T, int D>
void launch_fwd_wgmma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, Tensor& out,
                      Tensor& lse) {
  using Shared = typename WgTile<D>::Shared;
  auto kernel = attention_fwd_wgmma_kernel<T, D>;
  const cudaStream_t s = stream(q.device());  // makes q's device current: the attribute is per device
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Shared))));
  const CUtensorMap mq = operand_map<T>(q.raw(), p, p.Tq, p.H, kBQ), mk = operand_map<T>(k.raw(), p, p.Tk, p.Hk, kBK),
                    mv = operand_map<T>(v.raw(), p, p.Tk, p.Hk, kBK), mo = operand_map<T>(out.raw(), p, p.Tq, p.H, 64);
  const dim3 grid(unsigned(p.B) * unsigned(p.H), (p.Tq + kBQ - 1) / kBQ);
  kernel<<<grid, kWgThreads, sizeof(Shared), s>>>(
      p, mq, mk, mv, mo, w.defined() ? static_cast<const T*>(w.raw()) : nullptr, lse.data<float>());
  MOE_KERNEL_CHECK();
}

template <class T>
void dispatch_fwd_wgmma(const Params& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                        Tensor& out, Tensor& lse) {
  if (p.D == 64) launch_fwd_wgmma<T, 64>(p, q, k, v, w, out, lse);
  else launch_fwd_wgmma<T, 128>(p, q, k, v, w, out, lse);
}
}  // namespace

bool attention_forward_wgmma_fits(const attn::Params& p, const Tensor& v, const Tensor& out) {
  auto aligned = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0; };
  return (p.D == 64 || p.D == 128) && p.drop.rate == 0.f && p.vec16 && aligned(v) && aligned(out);
}

void attention_forward_wgmma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& head_weight, Tensor& out, Tensor& lse) {
  MOE_CHECK(attention_forward_wgmma_fits(p, v, out), "attention_forward_wgmma: head size ", p.D,
            " or operands it does not take");
  if (q.dtype() == DType::bf16) dispatch_fwd_wgmma<__nv_bfloat16>(p, q, k, v, head_weight, out, lse);
  else dispatch_fwd_wgmma<__half>(p, q, k, v, head_weight, out, lse);
}

}  // namespace moe::cuda
