// The step that layer-level moe-bench cases time: a fresh training graph (compute dtype = the run's
// dtype, f32 master parameters in one ParameterStore kept across calls), the input x as a leaf that
// takes a gradient (as the output of a previous layer would), the layer built by `build`, the lazy
// forward and the backward seeded with dy. Graph construction on the host is part of every call, as in
// training; gradients accumulate across calls (no zeroing), auxiliary losses are built but not
// back-propagated. Covered by tests/bench/bench_test.cpp (the layer.* cases).
#pragma once
#include <functional>

#include "bench/context.h"
#include "layers/builder.h"

namespace moe::bench {

using LayerFn = std::function<Expr(const Builder& b, const Expr& x)>;

/// Timing of forward + backward of `build` on input x with output gradient dy (dy has the output's shape).
Timing time_layer(BenchContext& ctx, const Tensor& x, const Tensor& dy, const LayerFn& build);

/// Model FLOPs of unmasked attention forward + backward over B x H heads of T x T, head size D.
double attention_fwd_bwd_flops(int64_t B, int64_t H, int64_t T, int64_t D);

/// Times and emits the baseline of the attention-layer cases: standard `heads`-head self-attention on
/// x [B, T, d] (FLOPs 3 * 4 * 2*N*d*d for q, k, v, o plus the attention); returns its row.
Row emit_mha_baseline(BenchContext& ctx, const Tensor& x, const Tensor& dy, int heads);

}  // namespace moe::bench
