// Grouped GEMM cases (lib/ops/grouped_gemm.h): the expert GEMMs of a sparsely-gated MoE FFN on their
// own. 16384 tokens, top-2, so R = 32768 rows sorted by expert and split evenly over E = 8, 32 or 64
// experts, or skewed (e8_skew: expert 0 holds half the rows, the others share the rest, one of them none);
// up projection x[R,d] @ w[e] [d,h] and down projection [R,h] @ [h,d], d = 512, h = 2048.
// Each is timed forward (FLOPs 2*R*d*h) and backward (dx += dout @ w[e]^T and dw[e] += x^T @ dout:
// 4*R*d*h), next to the same product as one dense GEMM with a shared weight (the matmul op; backward as
// two matmuls with beta = 1), the ceiling a grouped kernel can hope for. The whole layer is
// layer.moe_ffn. Covered by tests/bench/bench_test.cpp.
#include <string>
#include <vector>

#include "bench/cases.h"
#include "ops/grouped_gemm.h"
#include "ops/matmul.h"

namespace moe::bench {
namespace {
struct MoeShape {
  int64_t tokens, d, h;
};
constexpr int kTopK = 2;

MoeShape moe_shape(const BenchContext& ctx) {
  return ctx.pick(MoeShape{16384, 512, 2048}, MoeShape{1024, 128, 512}, MoeShape{32, 16, 32});
}

/// The expert offsets of `rows` rows: even, or skewed (half to expert 0, none to expert 1, the rest even).
std::vector<int32_t> expert_offsets(int64_t experts, int64_t rows, bool skewed) {
  std::vector<int32_t> off{0};
  const int64_t first = skewed ? rows / 2 : rows / experts, rest = skewed ? experts - 2 : experts - 1;
  off.push_back(int32_t(first));
  if (skewed) off.push_back(int32_t(first));  // expert 1: no rows
  for (int64_t e = 1; e <= rest; ++e) off.push_back(int32_t(first + e * (rows - first) / rest));
  return off;
}

/// One projection [R, in] -> [R, out]: grouped forward / backward, then the dense equivalents.
void projection(BenchContext& ctx, const std::string& name, int64_t experts, bool skewed, int64_t rows, int64_t in,
                int64_t out) {
  const Device dev = ctx.device();
  const std::vector<int32_t> off = expert_offsets(experts, rows, skewed);
  const Tensor offsets = Tensor::from_vector(off, Shape{experts + 1}, dev);
  const Tensor x = ctx.random(Shape{rows, in}), w = ctx.random(Shape{experts, in, out}, -0.1, 0.1);
  const Tensor dout = ctx.random(Shape{rows, out}), w_dense = ctx.random(Shape{in, out}, -0.1, 0.1);
  Tensor y = Tensor::empty(Shape{rows, out}, ctx.dtype(), dev), dx = Tensor::zeros(Shape{rows, in}, ctx.dtype(), dev);
  Tensor dw = Tensor::zeros(w.shape(), ctx.dtype(), dev), dw_dense = Tensor::zeros(w_dense.shape(), ctx.dtype(), dev);
  const double flops = 2.0 * double(rows) * double(in) * double(out);
  const std::string shape = shape_text(x.shape(), w.shape()), dense_shape = shape_text(x.shape(), w_dense.shape());
  const Timing dense_fwd = ctx.time([&] { matmul_forward(x, w_dense, y); });
  const Timing dense_bwd = ctx.time([&] {
    matmul_forward(dout, w_dense, dx, false, true, 1.f, 1.f);
    matmul_forward(x, dout, dw_dense, true, false, 1.f, 1.f);
  });
  ctx.emit({.label = name + ".dense.fwd", .shape = dense_shape, .timing = dense_fwd, .flops = flops});
  ctx.emit({.label = name + ".dense.bwd", .shape = dense_shape, .timing = dense_bwd, .flops = 2 * flops});
  Row f{.label = name + ".fwd", .shape = shape, .timing = ctx.time([&] { grouped_gemm_forward(x, w, offsets, y); })};
  f.flops = flops;
  f.variant = ctx.variant(KernelOp::grouped_gemm);
  f.ratio = f.timing.median_ms / dense_fwd.median_ms;
  f.baseline = name + ".dense.fwd";
  ctx.emit(f);
  Row b{.label = name + ".bwd", .shape = shape, .timing = ctx.time([&] {
          grouped_gemm_backward(x, w, offsets, dout, dx, dw);
        })};
  b.flops = 2 * flops;
  b.variant = f.variant;
  b.ratio = b.timing.median_ms / dense_bwd.median_ms;
  b.baseline = name + ".dense.bwd";
  ctx.emit(b);
}

Case grouped_case(int64_t experts, bool skewed) {
  const std::string e = std::to_string(experts);
  return {"grouped_gemm.e" + e + (skewed ? "_skew" : ""),
          "MoE expert GEMMs, 16384 tokens top-2 over " + e + " experts" +
              (skewed ? " (half the rows to one expert, one expert with none)" : "") + ", vs one dense GEMM",
          [experts, skewed](BenchContext& ctx) {
            const MoeShape s = moe_shape(ctx);
            const int64_t rows = s.tokens * kTopK;
            projection(ctx, "up", experts, skewed, rows, s.d, s.h);
            projection(ctx, "down", experts, skewed, rows, s.h, s.d);
          }};
}
}  // namespace

std::vector<Case> grouped_gemm_cases() {
  return {grouped_case(8, false), grouped_case(32, false), grouped_case(64, false), grouped_case(8, true)};
}

}  // namespace moe::bench
