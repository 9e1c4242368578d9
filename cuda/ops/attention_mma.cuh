// Shared pieces of the mma.sync attention kernels (attention_fwd_mma.cu, attention_bwd_mma.cu), some also of
// the Hopper ones (attention_{fwd,bwd}_wgmma.cu): four warps per block, the visible key range of a batch row (a
// key padding mask that is a prefix becomes a key length, so only the tile holding its end needs a mask), the
// backward's conversion of a finished dQ tile into dq, tile loads through cp.async (16-byte copies,
// zero-filled past the tensor; element loads where 16-byte vectors do not fit), and the ldmatrix
// fragment loads of mma.m16n8k16 operands (ptx.cuh's register layouts: g = lane / 4, t = lane % 4;
// a[r] = A[g + 8 (r % 2)][2t + 8 (r / 2)], b[r] = B[2t + 8 r][g], c[i] = C[g + 8 (i / 2)][2t + i % 2]).
// Shared-memory rows are padded by 16 bytes so the 8 rows one ldmatrix reads fall in distinct banks.
// Covered by tests/gpu/attention_parity_test.cpp (every variant).
#pragma once
#include "attention_common.cuh"
#include "common/ptx.cuh"

namespace moe::cuda::attn::mma {

constexpr int kMmaWarps = 4, kMmaThreads = 32 * kMmaWarps;

/// The keys of batch row b that any query may see: j < end, and with `general` (a padding mask that is
/// not a prefix of ones) only those whose mask byte is set.
struct KeyExtent {
  int end;
  bool general;
};

/// One block's reduction over the padding row of b (first zero, count of ones) by its Threads threads
/// (attention_fwd_wgmma.cu's blocks are larger); scratch: Threads / 16 ints of shared memory no one else
/// touches. Ends with a barrier when there is a mask (uniform).
template <int Threads = kMmaThreads>
__device__ __forceinline__ KeyExtent key_extent(const Params& p, int b, int* scratch) {
  constexpr int kWarps = Threads / 32;
  if (!p.pad) return {p.Tk, false};
  const uint8_t* m = p.pad + (long long)b * p.Tk;
  int first_zero = p.Tk, ones = 0;
  for (int j = threadIdx.x; j < p.Tk; j += Threads) {
    if (m[j]) ++ones;
    else first_zero = min(first_zero, j);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    first_zero = min(first_zero, __shfl_xor_sync(0xffffffffu, first_zero, o));
    ones += __shfl_xor_sync(0xffffffffu, ones, o);
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) scratch[warp] = first_zero, scratch[kWarps + warp] = ones;
  __syncthreads();
  first_zero = p.Tk, ones = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) first_zero = min(first_zero, scratch[w]), ones += scratch[kWarps + w];
  if (ones == first_zero) return {first_zero, false};  // ones exactly on [0, first_zero): a key length
  return {p.Tk, true};
}

/// Whether query i sees key j, on a tile that needs the mask (j < kv.end, causal, general padding).
__device__ __forceinline__ bool visible_key(const Params& p, const KeyExtent& kv, int b, int i, int j) {
  if (j >= kv.end || (p.causal && j > i + (p.Tk - p.Tq))) return false;
  return !kv.general || p.pad[(long long)b * p.Tk + j];
}

/// dq[b, q0.., h, :] += the f32 accumulator of that BQ-row tile (read past L1: other blocks added into it), by
/// Threads threads of which the caller is `tid`: the last key block to add into a dQ tile converts it.
template <class T, int Threads = kMmaThreads>
__device__ __forceinline__ void add_dq_tile(const Params& p, T* dq, const float* dq_acc, int b, int h, int q0, int BQ,
                                            int tid) {
  __threadfence();
  for (int idx = tid; idx < BQ * p.D; idx += Threads) {
    const int r = idx / p.D, d = idx % p.D, i = q0 + r;
    if (i >= p.Tq) break;
    const long long gi = (((long long)b * p.Tq + i) * p.H + h) * p.D + d;
    dq[gi] = from_float<T>(to_float(dq[gi]) + __ldcg(dq_acc + gi));
  }
}

/// Rows [t0, t0 + R) of one head of a [B,T,heads,D] tensor into s[R][LD] (columns [0, DP)): with vec16,
/// 16-byte cp.async copies (zero-filled beyond T and D) in the calling thread's current group; else
/// synchronous element stores. Every thread of the block takes part.
template <class T, int R, int DP, int LD>
__device__ __forceinline__ void load_rows(T* s, const T* x, int b, int t0, int T_, int heads, int head, int D,
                                          bool vec16) {
  static_assert(sizeof(T) == 2 && LD % 8 == 0 && DP % 8 == 0, "load_rows: 16-bit types, 16-byte rows");
  if (vec16) {
    for (int idx = threadIdx.x; idx < R * DP / 8; idx += kMmaThreads) {
      const int r = idx / (DP / 8), d = idx % (DP / 8) * 8, t = t0 + r;
      const bool in = t < T_ && d < D;
      ptx::cp_async<16, true>(s + r * LD + d, in ? x + (((long long)b * T_ + t) * heads + head) * D + d : x,
                              in ? 16 : 0);
    }
    return;
  }
  for (int idx = threadIdx.x; idx < R * DP; idx += kMmaThreads) {
    const int r = idx / DP, d = idx % DP, t = t0 + r;
    s[r * LD + d] = (t < T_ && d < D) ? x[(((long long)b * T_ + t) * heads + head) * D + d] : from_float<T>(0.f);
  }
}

/// A operand (16 x 16) of a tile stored [m][k] (row pitch ld): rows m0.., columns k0.. at `s`.
template <class T>
__device__ __forceinline__ void ldsm_a(uint32_t (&a)[4], const T* s, int ld) {
  const int lane = threadIdx.x % 32, mat = lane / 8;
  ptx::ldmatrix<4, false>(a, s + ((mat % 2) * 8 + lane % 8) * ld + (mat / 2) * 8);
}

/// A operand (16 x 16) of a tile stored transposed, [k][m]: A[m][k] = s[k * ld + m].
template <class T>
__device__ __forceinline__ void ldsm_a_trans(uint32_t (&a)[4], const T* s, int ld) {
  const int lane = threadIdx.x % 32, mat = lane / 8;
  ptx::ldmatrix<4, true>(a, s + ((mat / 2) * 8 + lane % 8) * ld + (mat % 2) * 8);
}

/// B operands of two adjacent n8 tiles (k16 x n16) of a tile stored [n][k]: B[k][n] = s[n * ld + k].
template <class T>
__device__ __forceinline__ void ldsm_b(uint32_t (&b)[2][2], const T* s, int ld) {
  const int lane = threadIdx.x % 32, mat = lane / 8;
  uint32_t r[4];
  ptx::ldmatrix<4, false>(r, s + ((mat / 2) * 8 + lane % 8) * ld + (mat % 2) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

/// B operands of two adjacent n8 tiles of a tile stored [k][n]: B[k][n] = s[k * ld + n].
template <class T>
__device__ __forceinline__ void ldsm_b_trans(uint32_t (&b)[2][2], const T* s, int ld) {
  const int lane = threadIdx.x % 32, mat = lane / 8;
  uint32_t r[4];
  ptx::ldmatrix<4, true>(r, s + ((mat % 2) * 8 + lane % 8) * ld + (mat / 2) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

/// The A operand of the k16 step kk of a product whose k runs over the columns of accumulator tiles c
/// (n8 tiles 2kk and 2kk + 1), rounded to T: the FlashAttention register reuse of P and dS.
template <class T, int N>
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&c)[N][4], int kk) {
  a[0] = ptx::pack2<T>(c[2 * kk][0], c[2 * kk][1]);
  a[1] = ptx::pack2<T>(c[2 * kk][2], c[2 * kk][3]);
  a[2] = ptx::pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = ptx::pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

/// The row's value of a quad (the 4 lanes holding one accumulator row): max or sum over lanes t.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/// The output factors of a thread's two accumulator rows row0 and row0 + 8 (running max m, partial sums l over
/// its quad): f = w / l (0 for a row with no visible key), and the row's lse = (m + log2 l) ln 2 (-inf then),
/// written by the quad's first lane (t4 == 0).
template <class T>
__device__ __forceinline__ void row_factors(const Params& p, const T* w, int b, int h, int row0, int t4,
                                            const float (&m)[2], const float (&l)[2], float (&f)[2], float* lse) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    const float lr = quad_sum(l[r]);
    f[r] = lr > 0.f ? 1.f / lr : 0.f;
    if (i < p.Tq) {
      f[r] *= head_weight(p, w, b, i, h);
      if (t4 == 0) lse[((long long)b * p.H + h) * p.Tq + i] = lr > 0.f ? (m[r] + log2f(lr)) * kLn2 : -INFINITY;
    }
  }
}

}  // namespace moe::cuda::attn::mma
