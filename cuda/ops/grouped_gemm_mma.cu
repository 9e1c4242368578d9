// The grouped GEMM's mma.sync kernel (sm_80+, bf16/f16 in, f32 accumulation), the default on those
// GPUs (ops/kernel_variants.h): 128x128x32 block tiles, 8 warps of 64x32, each k16 step four ldmatrix.x4
// for A and two for B feeding 16 mma.m16n8k16. Operand tiles come through a 3-stage cp.async pipeline
// in the orientation global memory has them: a tile whose columns are contiguous (mode 1) is kept
// [rows][cols], one whose rows are contiguous (mode 2: wᵀ for dX, xᵀ and doutᵀ for dW) is kept
// [cols][rows] and read with ldmatrix.trans, so every operand moves as 16-byte copies; strides that
// allow no 16-byte vector (mode 0) are loaded element by element. Rows are padded by 16 bytes, so the
// 8 rows an ldmatrix reads fall in different banks. The epilogue (act(alpha v + bias[e]), grouped_gemm.cuh)
// stores column pairs as one 4- or 8-byte store where the output's row length is even. Semantics as
// grouped_gemm.cuh's (rows and reduce mode). Covered by tests/gpu/grouped_gemm_parity_test.cpp (every
// variant) and the SASS check of scripts/internal/kernel-sass.sh (HMMA).
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/ptx.cuh"
#include "ops/grouped_gemm.cuh"

namespace moe::cuda::grouped {
namespace {
constexpr int BM = 128, BN = 128, BK = 32, kStages = 3;
constexpr int kTileElems = BM * (BK + 8);  // the larger orientation of either operand's tile
static_assert(BK * (BM + 8) <= kTileElems && BK * (BN + 8) <= kTileElems && BN * (BK + 8) <= kTileElems, "tile size");
constexpr size_t kSmemBytes(int elem) { return size_t(kStages) * 2 * kTileElems * size_t(elem); }

/// One operand's tile at logical (r, c) = (r0 + r, c0 + c) of src, r < R, c < C, inside [r_end, c_end).
/// Mode 1: stored [R][C + 8], 16-byte cp.async along c; mode 2: stored [C][R + 8], cp.async along r;
/// mode 0: stored [R][C + 8], element by element. Out-of-range parts are zeros.
template <class T, int R, int C>
__device__ __forceinline__ void load_operand(T* tile, const T* src, long long r0, long long r_end, long long c0,
                                             long long c_end, long long sr, long long sc, int mode) {
  constexpr int V = 8;  // 16-bit elements per 16-byte vector
  if (mode == 1 || mode == 2) {
    const bool rows = mode == 2;  // contiguous along r
    const int outer = rows ? C : R, inner = rows ? R : C, pitch = inner + 8;
    for (int v = threadIdx.x; v < outer * inner / V; v += kThreads) {
      const int o = v / (inner / V), i = (v % (inner / V)) * V;
      const long long gr = r0 + (rows ? i : o), gc = c0 + (rows ? o : i);
      const bool in = gr < r_end && gc < c_end;
      ptx::cp_async<16, true>(tile + o * pitch + i, in ? src + gr * sr + gc * sc : src, in ? 16 : 0);
    }
    return;
  }
  const T zero = from_float<T>(0.f);
  for (int i = threadIdx.x; i < R * C; i += kThreads) {
    const int r = i / C, c = i % C;
    tile[r * (C + 8) + c] = (r0 + r < r_end && c0 + c < c_end) ? src[(r0 + r) * sr + (c0 + c) * sc] : zero;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) grouped_mma_kernel(GroupArgs g) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  Tile t;
  if (!find_tile<BM>(g, t)) return;
  const T *A, *B;
  T* C;
  operands(g, t, A, B, C);
  const long long n0 = (long long)blockIdx.y * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wm = warp / 4, wn = warp % 4;
  auto a_tile = [&](int s) { return smem + s * 2 * kTileElems; };
  auto b_tile = [&](int s) { return smem + (s * 2 + 1) * kTileElems; };
  auto load = [&](long long k, int s) {
    if (k < t.k_end) {
      load_operand<T, BM, BK>(a_tile(s), A, t.m0, t.m_end, k, t.k_end, g.sam, g.sak, g.a_mode);
      load_operand<T, BK, BN>(b_tile(s), B, k, t.k_end, n0, g.n, g.sbk, g.sbn, g.b_mode);
    }
    ptx::cp_async_commit();  // an empty group past the end keeps the count of groups in flight uniform
  };
  float acc[4][4][4] = {};
  for (int s = 0; s < kStages - 1; ++s) load(t.k0 + s * BK, s);
  // Lane l addresses row l % 8 of 8x8 matrix l / 8 of each ldmatrix.x4.
  const int mat = lane / 8, row = lane % 8;
  int it = 0;
  for (long long k = t.k0; k < t.k_end; k += BK, ++it) {
    ptx::cp_async_wait<kStages - 2>();  // tile `it` has landed (this thread's copies) ...
    __syncthreads();                    // ... everyone's, and stage (it - 1) % kStages is free again
    load(k + (kStages - 1) * BK, (it + kStages - 1) % kStages);
    const T* as = a_tile(it % kStages);
    const T* bs = b_tile(it % kStages);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // A rows wm*64 + 16i + (mat % 2) 8 + row, K kk + (mat / 2) 8
        const int m = wm * 64 + i * 16 + (mat % 2) * 8, kc = kk + (mat / 2) * 8;
        if (g.a_mode == 2) ptx::ldmatrix<4, true>(af[i], as + (kc + row) * (BM + 8) + m);
        else ptx::ldmatrix<4, false>(af[i], as + (m + row) * (BK + 8) + kc);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // B columns wn*32 + 16j + (mat / 2) 8, K kk + (mat % 2) 8
        uint32_t r[4];
        const int n = wn * 32 + j * 16 + (mat / 2) * 8, kr = kk + (mat % 2) * 8;
        if (g.b_mode == 2) ptx::ldmatrix<4, false>(r, bs + (n + row) * (BK + 8) + kr);
        else ptx::ldmatrix<4, true>(r, bs + (kr + row) * (BN + 8) + n);
        bf[2 * j][0] = r[0], bf[2 * j][1] = r[1], bf[2 * j + 1][0] = r[2], bf[2 * j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) ptx::mma_m16n8k16<T>(acc[i][j], af[i], bf[j], acc[i][j]);
    }
  }
  ptx::cp_async_wait<0>();  // nothing may stay in flight past the kernel's end
  const int gid = lane / 4, tig = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // accumulator rows g and g + 8, columns 2 tig and 2 tig + 1
        const long long gm = t.m0 + wm * 64 + i * 16 + gid + 8 * h, gn = n0 + wn * 32 + j * 8 + 2 * tig;
        if (gm < t.m_end) store_pair(g, C, t.e, gm, gn, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
}

template <class T>
void launch_typed(const GroupArgs& g, dim3 grid, cudaStream_t stream, int device) {
  static bool configured[64] = {};  // the dynamic shared memory above 48 KiB, once per device
  if (!configured[device]) {
    CUDA_CHECK(cudaFuncSetAttribute(grouped_mma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(kSmemBytes(sizeof(T)))));
    configured[device] = true;
  }
  grouped_mma_kernel<T><<<grid, kThreads, kSmemBytes(sizeof(T)), stream>>>(g);
  MOE_KERNEL_CHECK();
}
}  // namespace

void launch_mma(const GroupArgs& g, DType dtype, dim3 grid, cudaStream_t stream, int device) {
  if (dtype == DType::bf16) launch_typed<__nv_bfloat16>(g, grid, stream, device);
  else launch_typed<__half>(g, grid, stream, device);
}

}  // namespace moe::cuda::grouped
