// Shared pieces of the fused attention kernels (attention_fwd.cu, attention_bwd.cu): the launch
// parameters, the visibility mask, the shared-memory tile loader and the register-tiled f32 matrix
// products that every kernel uses (256 threads as a 16x16 grid; thread (ty,tx) owns rows ty+16a and
// columns tx+16c of each product). Covered by tests/gpu/attention_parity_test.cpp.
#pragma once
#include <cstdint>

#include "common/cuda_types.cuh"
#include "ops/attention_dropout.h"
#include "tensor/tensor.h"

namespace moe::cuda::attn {

constexpr int kThreads = 256;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Params {
  int B, Tq, Tk, H, Hk, D, group;  // group = H / Hk
  bool causal;
  bool w_per_position;             // head_weight is [B,Tq,H] (else [B,H])
  float scale;                     // the softmax scale
  float scale_log2;                // scale * log2(e): scores live in the base-2 domain
  const uint8_t* pad;              // [B,Tk] or nullptr
  bool vec16;                      // 16-bit storage, D % 8 == 0 and 16-byte aligned q/k/v/dout: 16-byte loads
  AttentionDropout drop;           // rate 0: none
};

/// The dropout factor of weight (b, h, i, j): 0 or 1 / (1 - rate) (attention_dropout.h), 1 without dropout.
__device__ __forceinline__ float keep(const Params& p, int b, int h, int i, int j) {
  return attention_keep(p.drop, b, h, i, j, p.H, p.Tq, p.Tk);
}

/// The head weight of query i of head h (w [B,H] or [B,Tq,H]); 1 without one.
template <class T>
__device__ __forceinline__ float head_weight(const Params& p, const T* w, int b, int i, int h) {
  if (!w) return 1.f;
  return to_float(w[p.w_per_position ? ((long long)b * p.Tq + i) * p.H + h : (long long)b * p.H + h]);
}

__device__ __forceinline__ bool visible(const Params& p, int b, int i, int j) {
  if (i >= p.Tq || j >= p.Tk) return false;
  if (p.pad && !p.pad[(long long)b * p.Tk + j]) return false;
  return !p.causal || j <= i + (p.Tk - p.Tq);
}

/// Loads rows [t0, t0+R) of one head of a [B,T,heads,D] tensor into s[R][DP+1] (f32, times `mult`),
/// zero-filling rows >= T and columns >= D. Consecutive threads read consecutive d (coalesced).
template <class T, int R, int DP>
__device__ __forceinline__ void load_tile(float* s, const T* x, int b, int t0, int T_, int heads, int head, int D,
                                          float mult) {
  for (int idx = threadIdx.x; idx < R * DP; idx += kThreads) {
    const int r = idx / DP, d = idx % DP, t = t0 + r;
    float val = 0.f;
    if (t < T_ && d < D) val = to_float(x[(((long long)b * T_ + t) * heads + head) * D + d]) * mult;
    s[r * (DP + 1) + d] = val;
  }
}

/// Rows [t0, t0+R) of one head of a [B,T,heads,D] tensor of a 16-bit type into s[R][LD] (same type),
/// zero-filled beyond T and D; with `vec16`, 8 elements (16 bytes) per load. LD % 8 == 0.
template <class T, int R, int DP, int LD>
__device__ __forceinline__ void load_raw(T* s, const T* x, int b, int t0, int T_, int heads, int head, int D,
                                         bool vec16) {
  static_assert(sizeof(T) == 2 && LD % 8 == 0 && DP % 8 == 0, "load_raw: 16-bit types, 16-byte rows");
  if (vec16) {
    for (int idx = threadIdx.x; idx < R * DP / 8; idx += kThreads) {
      const int r = idx / (DP / 8), d = idx % (DP / 8) * 8, t = t0 + r;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (t < T_ && d < D) val = *reinterpret_cast<const uint4*>(x + (((long long)b * T_ + t) * heads + head) * D + d);
      *reinterpret_cast<uint4*>(s + r * LD + d) = val;
    }
    return;
  }
  for (int idx = threadIdx.x; idx < R * DP; idx += kThreads) {
    const int r = idx / DP, d = idx % DP, t = t0 + r;
    s[r * LD + d] = (t < T_ && d < D) ? x[(((long long)b * T_ + t) * heads + head) * D + d] : from_float<T>(0.f);
  }
}

/// acc[a][c] += sum_x A[row_a][x] * B[col_c][x]  (A rows ty+16a, B rows tx+16c; both [.][X] with strides).
template <int RA, int CB, int X>
__device__ __forceinline__ void mm_nt(float (&acc)[RA][CB], const float* A, int lda, const float* B, int ldb) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll 4
  for (int x = 0; x < X; ++x) {
    float a[RA], bb[CB];
#pragma unroll
    for (int i = 0; i < RA; ++i) a[i] = A[(ty + 16 * i) * lda + x];
#pragma unroll
    for (int j = 0; j < CB; ++j) bb[j] = B[(tx + 16 * j) * ldb + x];
#pragma unroll
    for (int i = 0; i < RA; ++i)
#pragma unroll
      for (int j = 0; j < CB; ++j) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
  }
}

/// acc[a][c] += sum_x A[row_a][x] * B[x][col_c].
template <int RA, int CB, int X>
__device__ __forceinline__ void mm_nn(float (&acc)[RA][CB], const float* A, int lda, const float* B, int ldb) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll 4
  for (int x = 0; x < X; ++x) {
    float a[RA], bb[CB];
#pragma unroll
    for (int i = 0; i < RA; ++i) a[i] = A[(ty + 16 * i) * lda + x];
#pragma unroll
    for (int j = 0; j < CB; ++j) bb[j] = B[x * ldb + tx + 16 * j];
#pragma unroll
    for (int i = 0; i < RA; ++i)
#pragma unroll
      for (int j = 0; j < CB; ++j) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
  }
}

/// acc[a][c] += sum_x A[x][row_a] * B[x][col_c].
template <int RA, int CB, int X>
__device__ __forceinline__ void mm_tn(float (&acc)[RA][CB], const float* A, int lda, const float* B, int ldb) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll 4
  for (int x = 0; x < X; ++x) {
    float a[RA], bb[CB];
#pragma unroll
    for (int i = 0; i < RA; ++i) a[i] = A[x * lda + ty + 16 * i];
#pragma unroll
    for (int j = 0; j < CB; ++j) bb[j] = B[x * ldb + tx + 16 * j];
#pragma unroll
    for (int i = 0; i < RA; ++i)
#pragma unroll
      for (int j = 0; j < CB; ++j) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
  }
}

/// Padded head size of the kernel instance for head size D (any D <= 256 runs on the next one up).
inline int padded_head_size(int D) { return D <= 32 ? 32 : D <= 64 ? 64 : D <= 128 ? 128 : 256; }

}  // namespace moe::cuda::attn

namespace moe::cuda {
/// The kernel parameters of one attention call (shapes already checked by lib/ops/attention.cpp);
/// vec16 covers q and k only: callers also check v (and dout).
attn::Params attention_params(const Tensor& q, const Tensor& k, const Tensor& key_padding, bool causal, float scale,
                              const Tensor& head_weight);
/// Tensor-core forward for bf16/f16 (attention_fwd_tc.cu).
void attention_forward_tc(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& head_weight, Tensor& out, Tensor& lse);
/// Tensor-core backward main pass for bf16/f16 (attention_bwd_tc.cu); delta and the f32 workspaces
/// (dq_acc [B,Tq,H,D], dw_acc [B,Tq,H], either may be undefined) come from attention_bwd.cu.
void attention_backward_tc(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                           Tensor& dq_acc, Tensor& dw_acc, Tensor& dk, Tensor& dv);
/// mma.sync forward for bf16/f16 (attention_fwd_mma.cu).
void attention_forward_mma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& head_weight, Tensor& out, Tensor& lse);
/// wgmma forward for bf16/f16 on sm_90a (attention_fwd_wgmma.cu), for the calls attention_forward_wgmma_fits
/// takes: head size 64 or 128, no attention dropout, q, k, v and out 16-byte aligned (TMA's rule; the
/// strides of a contiguous [B,T,heads,D] tensor with D % 8 == 0 are multiples of 16 bytes).
bool attention_forward_wgmma_fits(const attn::Params& p, const Tensor& v, const Tensor& out);
void attention_forward_wgmma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& head_weight, Tensor& out, Tensor& lse);
/// mma.sync backward main pass for bf16/f16 (attention_bwd_mma.cu): dq_acc (f32 [B,Tq,H,D]), dq_count
/// (i32 [B,H,ceil(Tq / attention_backward_mma_query_tile())]) and dw_acc (f32 [B,Tq,H]) zeroed by the
/// delta pre-pass; it adds dq itself (dq_acc, dq_count and dq undefined when dq is not wanted).
void attention_backward_mma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                            Tensor& dq_acc, Tensor& dq_count, Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv);
/// wgmma backward main pass for bf16/f16 on sm_90a (attention_bwd_wgmma.cu), with attention_backward_mma's
/// workspaces and contract, for the calls attention_backward_wgmma_fits takes: head size 64 or 128, no
/// attention dropout, 16-byte operands (vec16: q, k, v and dout aligned).
bool attention_backward_wgmma_fits(const attn::Params& p);
void attention_backward_wgmma(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& head_weight, const Tensor& dout, const Tensor& lse, const Tensor& delta,
                              Tensor& dq_acc, Tensor& dq_count, Tensor& dq, Tensor& dw_acc, Tensor& dk, Tensor& dv);
/// The query rows of one dQ tile of attention_backward_mma and _wgmma (their arrival counters count per tile).
int attention_backward_mma_query_tile();
/// Forward for few query rows (decoding; attention_decode.cu): one block per query row and chunk of keys;
/// key_rows (i32 [B, Tk]) addresses a decoding cache's rows, or is undefined. No dropout.
void attention_decode(const attn::Params& p, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& head_weight, const Tensor& key_rows, Tensor& out, Tensor& lse);
/// The keys per block attention_decode gives `rows` query rows over `keys` keys on a GPU of `multiprocessors`.
int attention_decode_chunk(int rows, int keys, int multiprocessors);
}  // namespace moe::cuda
