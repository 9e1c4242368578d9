// Basic layers built from graph ops: dense (affine) projections, layer normalisation with learned
// gain and bias, sinusoidal position encodings, the residual block (on every row or on listed rows) and the
// position-wise feed-forward block. Covered by tests/layers/transformer_test.cpp (the FFN's fused node:
// tests/ops/bias_act_dropout_test.cpp).
#pragma once
#include <functional>
#include <string>

#include "layers/builder.h"
#include "ops/unary.h"

namespace moe {

/// y = x W + b with W [in, out] (Glorot-uniform) and b [out] (zeros) unless bias = false.
Expr dense(const Builder& b, const Expr& x, int64_t in, int64_t out, bool bias = true, const std::string& group = "");
/// Layer norm over the last axis with gain "ln.g" (ones) and bias "ln.b" (zeros), both f32.
Expr layer_norm_layer(const Builder& b, const Expr& x, int64_t dim, float eps = 1e-5f);
/// Sinusoidal position encodings [length, dim] for positions offset..offset+length-1 (fairseq's
/// layout: the first half of the channels are sines, the second half cosines), in `dtype` on `device`.
Tensor sinusoidal_positions(int64_t length, int64_t dim, int64_t offset, DType dtype, Device device);
/// u8 [B, T]: 1 where ids != pad_id; undefined when no position is padding (ids read on the host).
Tensor padding_mask(const Tensor& ids, int pad_id);
/// The feed-forward activations (model.activation).
MOE_NAMED_ENUM(Activation, relu, gelu)
UnaryOp activation_op(Activation a);
/// Residual block around f with layer norm "ln" under b: pre-norm x + drop(f(LN(x))), post-norm LN(x + drop(f(x))).
Expr residual_block(const Builder& b, const Expr& x, int64_t dim, bool pre_norm, float dropout_p,
                    const std::function<Expr(const Expr&)>& f);
/// residual_block on the rows `rows` [R] (i32 flat positions b T + t) of x [B, T, d] only: the other rows (the
/// padding, which only masked attention reads) pass through, so f and, pre-norm, the norm see R rows instead of
/// B T. Pre-norm: x + drop(f(LN(x))) at those rows; post-norm: LN(x + drop(f(x))), f at those rows, the norm on all.
Expr residual_block_rows(const Builder& b, const Expr& x, const Expr& rows, int64_t dim, bool pre_norm, float dropout_p,
                         const std::function<Expr(const Expr&)>& f);
/// FFN: dense(d -> hidden), activation, dropout (the three as one bias_act_dropout node after the
/// GEMM), dense(hidden -> d).
Expr feed_forward(const Builder& b, const Expr& x, int64_t dim, int64_t hidden, Activation act,
                  float activation_dropout);

}  // namespace moe
