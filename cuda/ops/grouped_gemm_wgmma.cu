// The grouped GEMM's Hopper kernel (sm_90a, bf16/f16 in, f32 accumulation): persistent, warp-specialised
// blocks of 384 threads walk a tile schedule built on the device from the expert offsets (each block turns
// the offsets into per-expert tile counts and their prefix sums; tile t is then found by a binary search),
// so no host synchronisation and no block without work. Warpgroup 0 is the producer: one elected thread
// loads 128 x 64 operand tiles by TMA (128-byte swizzle) into a ring of 4 stages, each completing on its
// mbarrier; warpgroups 1 and 2 each multiply 64 rows of the 128 x 128 output tile with wgmma m64n128k16
// straight from shared memory (K-major or MN-major through the descriptors, so the transposed operands of
// dX and dW need no copy), release the stage, and store their accumulators through the epilogue
// (act(alpha v + bias[e]), grouped_gemm.cuh; rows past the expert's end masked). In the weight-gradient
// mode the reduction runs over an expert's rows: the lines of the last B tile past them are zeroed before
// the wgmma. setmaxnreg gives the consumers the producer's registers. Semantics as grouped_gemm.cuh's; the
// dispatch takes it where every operand is 16-byte aligned with 16-byte strides (TMA's rule). Covered by
// tests/gpu/grouped_gemm_parity_test.cpp (every variant, on the emulator) and the SASS check of
// scripts/internal/kernel-sass.py (HGMMA).
#include <cuda.h>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/ptx.cuh"
#include "common/tensor_map.cuh"
#include "ops/grouped_gemm.cuh"
#include "tensor/cuda_runtime.h"

namespace moe::cuda::grouped {
namespace {
using ptx::Major;
constexpr int BM = 128, BN = 128, BK = 64, kStages = 4, kBlock = 384;
constexpr int kStageBytes = (BM + BN) * BK * 2;  // one A and one B tile of 16-bit elements
constexpr int kBoxBytes = 64 * 64 * 2;           // a TMA box of 64 x 64 elements: 8 KiB
struct Shared {
  alignas(1024) uint8_t a[kStages][BM * BK * 2];
  alignas(1024) uint8_t b[kStages][BN * BK * 2];
  uint64_t full[kStages], empty[kStages];
  int32_t off[kMaxExperts + 1];    // the expert offsets
  int32_t start[kMaxExperts + 1];  // tile t belongs to expert e when start[e] <= t < start[e + 1]
};

/// The tile schedule: per expert, its output tiles (row mode: its rows in BM tiles times the column
/// tiles; reduce mode: its whole output), prefix-summed; returns the total.
__device__ int build_schedule(const GroupArgs& g, Shared& s) {
  for (int i = threadIdx.x; i <= g.experts; i += kBlock) s.off[i] = g.offsets[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    const int n_tiles = int((g.n + BN - 1) / BN);
    const int per = g.reduce_mode ? int((g.m_fixed + BM - 1) / BM) * n_tiles : 0;
    int total = 0;
    for (int e = 0; e < g.experts; ++e) {
      s.start[e] = total;
      const long long lo = max(0LL, (long long)s.off[e]), hi = min(g.rows, (long long)s.off[e + 1]);
      total += g.reduce_mode ? per : int(hi > lo ? (hi - lo + BM - 1) / BM : 0) * n_tiles;
    }
    s.start[g.experts] = total;
  }
  __syncthreads();
  return s.start[g.experts];
}

struct Work {
  int e;
  long long m0, m_end, n0, k0, k_end;
};

/// Tile t of the schedule: its expert (binary search in start), rows, columns and reduction range.
__device__ Work work_of(const GroupArgs& g, const Shared& s, int t) {
  int lo = 0, hi = g.experts;  // the last e with start[e] <= t
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (s.start[mid] <= t ? lo : hi) = mid;
  }
  const int n_tiles = int((g.n + BN - 1) / BN), local = t - s.start[lo];
  Work w{lo, 0, 0, (long long)(local % n_tiles) * BN, 0, 0};
  const long long begin = max(0LL, (long long)s.off[lo]), end = min(g.rows, (long long)s.off[lo + 1]);
  if (g.reduce_mode) {
    w.m0 = (long long)(local / n_tiles) * BM, w.m_end = g.m_fixed, w.k0 = begin, w.k_end = end;
  } else {
    w.m0 = begin + (long long)(local / n_tiles) * BM, w.m_end = end, w.k0 = 0, w.k_end = g.k_fixed;
  }
  return w;
}

__device__ int k_tiles(const Work& w) { return int((w.k_end - w.k0 + BK - 1) / BK); }

/// Warpgroup 0: loads every stage of every tile of this block by TMA (one elected thread).
__device__ void produce(const GroupArgs& g, Shared& s, const CUtensorMap& ma, const CUtensorMap& mb, int total) {
  if (threadIdx.x >= 32 || !ptx::elect_one()) return;
  int stage = 0;
  unsigned phase = 0;
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const Work w = work_of(g, s, t);
    for (int kt = 0; kt < k_tiles(w); ++kt) {
      ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);  // the consumers released it (the first round passes)
      ptx::mbarrier_arrive_expect_tx(&s.full[stage], kStageBytes);
      const int k = int(w.k0) + kt * BK, m = int(w.m0), n = int(w.n0);
      if (g.reduce_mode) {  // A and B MN-major: two 64-wide boxes each
        for (int j = 0; j < 2; ++j) {
          ptx::tma_load(s.a[stage] + j * kBoxBytes, &ma, &s.full[stage], m + 64 * j, k);
          ptx::tma_load(s.b[stage] + j * kBoxBytes, &mb, &s.full[stage], n + 64 * j, k);
        }
      } else {
        ptx::tma_load(s.a[stage], &ma, &s.full[stage], k, m);  // A K-major: one 64 x 128 box
        if (g.b_mode == 2) {
          ptx::tma_load(s.b[stage], &mb, &s.full[stage], k, n, w.e);  // B K-major (w [M, K])
        } else {
          for (int j = 0; j < 2; ++j) ptx::tma_load(s.b[stage] + j * kBoxBytes, &mb, &s.full[stage], n + 64 * j, k, w.e);
        }
      }
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
  }
}

/// Zeroes the lines of B's stage for reduction indices >= `valid` (past the expert's rows), for the 256
/// consumer threads, and makes the zeros visible to the wgmmas of both consumer warpgroups.
__device__ void zero_tail(uint8_t* b, int valid) {
  const int ct = threadIdx.x - 128;
  for (int i = ct; i < 2 * 64 * 8; i += 256) {  // 16-byte chunks of the two boxes' lines k >= valid
    const int box = i / (64 * 8), line = (i / 8) % 64, chunk = i % 8;
    if (line >= valid) reinterpret_cast<uint4*>(b + box * kBoxBytes + line * 128)[chunk] = make_uint4(0, 0, 0, 0);
  }
  ptx::fence_proxy_async();
  ptx::named_barrier_sync(1, 256);
}

/// Warpgroups 1 and 2: rows 64 (wg - 1) .. + 63 of each tile.
template <class T, Major A, Major B>
__device__ void consume(const GroupArgs& g, Shared& s, int total) {
  const int wg = threadIdx.x / 128 - 1, lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  int stage = 0;
  unsigned phase = 0;
  float acc[64];
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const Work w = work_of(g, s, t);
    for (float& v : acc) v = 0.f;
    for (int kt = 0; kt < k_tiles(w); ++kt) {
      ptx::mbarrier_wait(&s.full[stage], phase);
      const int valid = int(w.k_end - w.k0) - kt * BK;
      if (g.reduce_mode && valid < BK) zero_tail(s.b[stage], valid);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        // A: this warpgroup's 64 rows (the second half of a K-major tile, or the second 64-wide box).
        const uint8_t* a = s.a[stage] + wg * (A == Major::K ? 64 * 128 : kBoxBytes) + kk * (A == Major::K ? 32 : 2048);
        const uint8_t* b = s.b[stage] + kk * (B == Major::K ? 32 : 2048);
        const uint64_t da = ptx::make_smem_desc(a, 16, 1024, ptx::Swizzle::b128);
        const uint64_t db = ptx::make_smem_desc(b, B == Major::K ? 16 : kBoxBytes, 1024, ptx::Swizzle::b128);
        ptx::wgmma<BN, T, A, B>(acc, da, db, true);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ptx::fence_registers(acc);
      ptx::mbarrier_arrive(&s.empty[stage]);  // every consumer thread arrives: the stage is free again
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    if (g.reduce_mode && w.k_end <= w.k0) continue;  // an expert without rows adds nothing to its dW
    const T *pa, *pb;
    T* c;
    operands(g, Tile{w.m0, w.m_end, w.k0, w.k_end, w.e}, pa, pb, c);
    const int gid = lane / 4, tig = lane % 4;
#pragma unroll
    for (int r = 0; r < 64; r += 2) {  // d[r], d[r + 1]: row 16 warp + g + 8 ((r / 2) % 2), columns 8 (r / 4) + 2 tig
      const long long gm = w.m0 + 64 * wg + 16 * warp + gid + 8 * ((r / 2) % 2);
      if (gm < w.m_end) store_pair(g, c, w.e, gm, w.n0 + 8 * (r / 4) + 2 * tig, acc[r], acc[r + 1]);
    }
  }
}

template <class T, Major A, Major B>
__global__ void __launch_bounds__(kBlock, 1) grouped_wgmma_kernel(GroupArgs g, const __grid_constant__ CUtensorMap ma,
                                                                  const __grid_constant__ CUtensorMap mb) {
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  Shared& s = *reinterpret_cast<Shared*>(wgmma_smem);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) ptx::mbarrier_init(&s.full[i], 1), ptx::mbarrier_init(&s.empty[i], 256);
    ptx::fence_mbarrier_init();
  }
  const int total = build_schedule(g, s);  // its barrier also publishes the mbarriers
  if (threadIdx.x < 128) {
    ptx::setmaxnreg<40, false>();
    produce(g, s, ma, mb, total);
  } else {
    ptx::setmaxnreg<232, true>();
    consume<T, A, B>(g, s, total);
  }
}

CUtensorMap map_2d(const void* base, uint64_t inner, uint64_t outer, uint64_t stride_elems, uint32_t box_outer,
                   CUtensorMapDataType type) {
  const uint64_t dims[2] = {inner, outer}, strides[1] = {stride_elems * 2};
  const uint32_t box[2] = {64, box_outer};
  return make_tensor_map(type, base, 2, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
}
CUtensorMap map_3d(const void* base, uint64_t inner, uint64_t outer, uint64_t stride_elems, uint64_t experts,
                   uint64_t expert_stride, uint32_t box_outer, CUtensorMapDataType type) {
  const uint64_t dims[3] = {inner, outer, experts}, strides[2] = {stride_elems * 2, expert_stride * 2};
  const uint32_t box[3] = {64, box_outer, 1};
  return make_tensor_map(type, base, 3, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
}

template <class T, Major A, Major B>
void launch_typed(const GroupArgs& g, const CUtensorMap& ma, const CUtensorMap& mb, unsigned blocks,
                  cudaStream_t stream, int device) {
  static bool configured[64] = {};
  auto kernel = grouped_wgmma_kernel<T, A, B>;
  if (!configured[device]) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Shared))));
    configured[device] = true;
  }
  kernel<<<blocks, kBlock, sizeof(Shared), stream>>>(g, ma, mb);
  MOE_KERNEL_CHECK();
}

template <class T>
void launch_for(const GroupArgs& g, unsigned blocks, cudaStream_t stream, int device) {
  const CUtensorMapDataType type = sizeof(T) == 2 && std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                              : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  if (g.reduce_mode) {  // A(m, k) = a[m + k sak], B(k, n) = b[k sbk + n]: both MN-major, over the rows
    const CUtensorMap ma = map_2d(g.a, uint64_t(g.m_fixed), uint64_t(g.rows), uint64_t(g.sak), 64, type);
    const CUtensorMap mb = map_2d(g.b, uint64_t(g.n), uint64_t(g.rows), uint64_t(g.sbk), 64, type);
    return launch_typed<T, Major::MN, Major::MN>(g, ma, mb, blocks, stream, device);
  }
  const CUtensorMap ma = map_2d(g.a, uint64_t(g.k_fixed), uint64_t(g.rows), uint64_t(g.sam), BM, type);
  if (g.b_mode == 2) {  // B(k, n) = b_e[k + n sbn]: K-major
    const CUtensorMap mb = map_3d(g.b, uint64_t(g.k_fixed), uint64_t(g.n), uint64_t(g.sbn), uint64_t(g.experts),
                                  uint64_t(g.b_expert_stride), BN, type);
    return launch_typed<T, Major::K, Major::K>(g, ma, mb, blocks, stream, device);
  }
  const CUtensorMap mb = map_3d(g.b, uint64_t(g.n), uint64_t(g.k_fixed), uint64_t(g.sbk), uint64_t(g.experts),
                                uint64_t(g.b_expert_stride), 64, type);
  launch_typed<T, Major::K, Major::MN>(g, ma, mb, blocks, stream, device);
}
}  // namespace

bool wgmma_fits(const GroupArgs& g) {
  return g.reduce_mode ? g.a_mode == 2 && g.b_mode == 1 : g.a_mode == 1 && g.b_mode != 0;
}

void launch_wgmma(const GroupArgs& g, DType dtype, long long max_tiles, cudaStream_t stream, int device) {
  const unsigned blocks =
      unsigned(std::max<long long>(1, std::min<long long>(multiprocessor_count(device), max_tiles)));
  if (dtype == DType::bf16) launch_for<__nv_bfloat16>(g, blocks, stream, device);
  else launch_for<__half>(g, blocks, stream, device);
}

}  // namespace moe::cuda::grouped
