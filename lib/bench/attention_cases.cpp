// Fused attention cases (lib/ops/attention.h), q, k, v [B,T,H,D] random, scale 1/sqrt(D): the forward,
// the backward alone (given the forward's out and lse) and forward + backward, at transformer-base
// shapes: B=64 H=8 T=512 D=64 causal and not, and B=16 H=16 T=2048 D=64 causal; and one beam-search step
// over a decoding cache (attention.decode, attention.decode_long: the cache's row table). FLOPs from
// attention_flops(): 2 GEMMs forward and 5 backward of 2*D flops per visible (query, key) pair (causal:
// T(T+1)/2 pairs per head). The backward accumulates into dq, dk, dv (as in training). Covered by
// tests/bench/bench_test.cpp.
#include <cmath>
#include <cstdio>

#include "bench/cases.h"
#include "ops/attention.h"
#include "ops/gather_scatter.h"

namespace moe::bench {
namespace {
struct AttnShape {
  int64_t B, H, T, D;
};

Case attention_case(const char* name, const char* what, bool causal, AttnShape full, AttnShape small, AttnShape tiny) {
  return {name, what, [=](BenchContext& ctx) {
            const AttnShape s = ctx.pick(full, small, tiny);
            const Shape qs{s.B, s.T, s.H, s.D};
            const Tensor q = ctx.random(qs), k = ctx.random(qs), v = ctx.random(qs), dout = ctx.random(qs);
            const Tensor none;
            Tensor hw_grad;
            Tensor out = Tensor::empty(qs, ctx.dtype(), ctx.device());
            Tensor lse = Tensor::empty(Shape{s.B, s.H, s.T}, attention_lse_dtype(ctx.dtype()), ctx.device());
            Tensor dq = Tensor::zeros(qs, ctx.dtype(), ctx.device()), dk = Tensor::zeros(qs, ctx.dtype(), ctx.device()),
                   dv = Tensor::zeros(qs, ctx.dtype(), ctx.device());
            const float scale = 1.f / std::sqrt(float(s.D));
            auto fwd = [&] { attention_forward(q, k, v, none, causal, scale, none, out, lse); };
            auto bwd = [&] {
              attention_backward(q, k, v, none, causal, scale, none, out, lse, dout, dq, dk, dv, hw_grad);
            };
            const double f_flops = attention_flops(s.B, s.H, s.T, s.T, s.D, causal, false);
            const double b_flops = attention_flops(s.B, s.H, s.T, s.T, s.D, causal, true);
            char shape[96];
            std::snprintf(shape, sizeof shape, "B%lld H%lld T%lld D%lld%s", (long long)s.B, (long long)s.H,
                          (long long)s.T, (long long)s.D, causal ? " causal" : "");
            const std::string fwd_kernel = ctx.variant(KernelOp::attention_forward);
            const std::string bwd_kernel = ctx.variant(KernelOp::attention_backward);
            ctx.emit(
                {.label = "fwd", .shape = shape, .timing = ctx.time(fwd), .flops = f_flops, .variant = fwd_kernel});
            ctx.emit(
                {.label = "bwd", .shape = shape, .timing = ctx.time(bwd), .flops = b_flops, .variant = bwd_kernel});
            ctx.emit({.label = "fwd+bwd",
                      .shape = shape,
                      .timing = ctx.time([&] {
                        fwd();
                        bwd();
                      }),
                      .flops = f_flops + b_flops});
          }};
}

/// One beam-search step's attention over a self-attention cache: q [B,1,H,D] against T cached keys after a
/// reorder of the hypotheses (order, i32 [B]). moe reorders the cache's row table (i32 [B,T]) and reads the keys
/// through it (layers/kv_cache.h); scripts/bench_torch.py reorders the cached keys and values by index_select,
/// as fairseq's reorder_incremental_state does, then runs SDPA. FLOPs: attention_flops with Tq = 1.
Case decode_case(const char* name, const char* what, AttnShape full, AttnShape small, AttnShape tiny) {
  return {name, what, [=](BenchContext& ctx) {
            const AttnShape s = ctx.pick(full, small, tiny);  // T: the cached keys
            const Tensor q = ctx.random(Shape{s.B, 1, s.H, s.D}), k = ctx.random(Shape{s.B, s.T, s.H, s.D}),
                         v = ctx.random(Shape{s.B, s.T, s.H, s.D});
            const Tensor table = ctx.classes(Shape{s.B, s.T}, s.B), order = ctx.classes(Shape{s.B}, s.B), none;
            Tensor rows = Tensor::empty(table.shape(), DType::i32, ctx.device());
            Tensor out = Tensor::empty(q.shape(), ctx.dtype(), ctx.device());
            Tensor lse = Tensor::empty(Shape{s.B, s.H, 1}, attention_lse_dtype(ctx.dtype()), ctx.device());
            const float scale = 1.f / std::sqrt(float(s.D));
            char shape[96];
            std::snprintf(shape, sizeof shape, "B%lld H%lld Tk%lld D%lld", (long long)s.B, (long long)s.H,
                          (long long)s.T, (long long)s.D);
            ctx.emit({.label = "fwd",
                      .shape = shape,
                      .timing = ctx.time([&] {
                        index_select_forward(table, order, rows);
                        attention_forward(q, k, v, none, false, scale, none, out, lse, {}, rows);
                      }),
                      .flops = attention_flops(s.B, s.H, 1, s.T, s.D, false, false),
                      .variant = ctx.device().is_cuda() ? "attention_decode_kernel" : ""});
          }};
}
}  // namespace

std::vector<Case> attention_cases() {
  return {
      attention_case("attention.base_causal", "decoder self-attention, transformer-base batch", true, {64, 8, 512, 64},
                     {2, 8, 128, 64}, {2, 2, 16, 8}),
      attention_case("attention.base", "encoder self-attention, transformer-base batch", false, {64, 8, 512, 64},
                     {2, 8, 128, 64}, {2, 2, 16, 8}),
      attention_case("attention.long_causal", "long-context causal attention", true, {16, 16, 2048, 64},
                     {1, 8, 256, 64}, {1, 2, 32, 8}),
      decode_case("attention.decode", "a beam-5 step of 64 sentences over a 64-token cache (reorder included)",
                  {320, 8, 64, 64}, {40, 8, 32, 64}, {10, 2, 8, 8}),
      decode_case("attention.decode_long", "a beam-5 step of one sentence over a 2048-token cache (keys split)",
                  {5, 8, 2048, 64}, {5, 8, 256, 64}, {5, 2, 40, 8}),
  };
}

}  // namespace moe::bench
