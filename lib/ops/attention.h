// Fused scaled dot-product attention (FlashAttention-2 style on the GPU), forward and backward.
//   q [B,Tq,H,D], k and v [B,Tk,Hk,D] (H % Hk == 0; query head h reads key head h / (H/Hk)).
//   s_ij = scale * q_i.k_j; key j visible to query i iff key_padding[b,j] != 0 (when given) and, when
//   causal, j <= i + (Tk - Tq). p = softmax over visible keys, o_i = sum_j p_ij v_j (0 if none visible),
//   out = w * o with w = head_weight [B,H] or [B,Tq,H] (when given); lse [B,H,Tq] = log sum_j e^{s_ij}
//   (-inf for a row with no visible key; f32, or f64 for f64 inputs).
// Backward adds dq, dk, dv (dk/dv summed over the heads sharing a key head) and dw = sum_d dout*o.
// Attention dropout (training; attention_dropout.h): o_i = sum_j p_ij z_ij v_j with z_ij = 0 or
// 1 / (1 - rate) drawn by Philox per (b, h, i, j); lse stays that of p. The backward uses
// dp_ij = w z_ij dout_i.v_j, delta_i = sum_j p_ij dp_ij (= dout_i.out_i), dv_j += p_ij z_ij w dout_i.
// Decoding caches (forward only): with key_rows (i32 [B,Tk]), k and v are [R,C,Hk,D] storage (Tk <= C) and key j of
// sequence b is k[key_rows[b,j], j] (v likewise): beam search reorders hypotheses by rewriting the small table, not
// the cache (lib/layers/kv_cache.h).
// CPU reference: lib/ops/attention_cpu.cpp; CUDA: cuda/ops/attention_fwd*.cu, attention_decode.cu (one query row
// per block, split over the keys when the rows are few). Tests: tests/ops/attention_test.cpp,
// tests/gpu/attention_parity_test.cpp.
#pragma once
#include "ops/attention_dropout.h"
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout = {}, const Tensor& key_rows = Tensor());
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout = {});
}  // namespace cpu
namespace cuda {
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout = {}, const Tensor& key_rows = Tensor());
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout = {});
}  // namespace cuda

/// The dtype of the saved log-sum-exp for inputs of dtype `dt` (f64 for f64, else f32).
DType attention_lse_dtype(DType dt);

/// Forward. key_padding (u8 [B,Tk]) and head_weight ([B,H] or [B,Tq,H], q's dtype) may be undefined
/// Tensors. out [B,Tq,H,D] (q's dtype) and lse [B,H,Tq] (attention_lse_dtype) are written. key_rows: see above
/// (undefined: k and v are [B,Tk,Hk,D]); its entries must lie in [0, R) (checked on the CPU).
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout = {}, const Tensor& key_rows = Tensor());

/// Backward: dq, dk, dv, dhead_weight are ADDED to; any of them may be undefined (not wanted).
/// `out` and `lse` are the forward's outputs; dout has out's shape.
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout = {});

/// Floating-point operations of attention: 2 GEMMs forward, 5 backward (FlashAttention's convention), each
/// 2*D flops per visible (query, key) pair (causal counts only visible pairs); `backward`: backward pass only.
double attention_flops(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, bool causal, bool backward);

}  // namespace moe
