// Memory-bound row-wise cases, reported in GB/s of minimal traffic (each input read once, each output
// written once; s = bytes per activation element, 4 for the f32 gamma/beta and per-row statistics):
//   layer_norm [N,d] (lib/ops/layer_norm.h), gamma/beta f32:
//     fwd: read x + gamma, beta; write y + mean, rstd          = 2*N*d*s + 2*d*4 + 2*N*4
//     bwd: read x, dy, gamma, mean, rstd; write dx, dgamma, dbeta = 3*N*d*s + 3*d*4 + 2*N*4
//   softmax [N,V] (lib/ops/softmax.h): fwd read x, write y = 2*N*V*s; bwd read y, dy, write dx = 3*N*V*s
//   cross_entropy [N,V] fused with log-softmax, label smoothing 0.1 (lib/ops/cross_entropy.h), i32 targets:
//     fwd: read logits, targets; write loss, lse               = N*V*s + 4*N + 2*N*4
//     bwd: read logits, targets, lse, dloss; write dlogits     = 2*N*V*s + 4*N + 2*N*4
// Backward kernels accumulate into their outputs (dx += ...), so they move more than this minimum.
// Shapes: layer norm over 16384 x 512, softmax and cross-entropy over 16384 rows of a 32k vocabulary.
// Covered by tests/bench/bench_test.cpp.
#include "bench/cases.h"
#include "ops/cross_entropy.h"
#include "ops/layer_norm.h"
#include "ops/softmax.h"

namespace moe::bench {
namespace {
struct Rows {
  int64_t n, d;
};

void layer_norm_case(BenchContext& ctx) {
  const Rows r = ctx.pick(Rows{16384, 512}, Rows{4096, 512}, Rows{64, 32});
  const Device dev = ctx.device();
  const Shape xs{r.n, r.d};
  const Tensor x = ctx.random(xs), dy = ctx.random(xs);
  const Tensor gamma = ctx.random(Shape{r.d}, DType::f32, 0.5, 1.5), beta = ctx.random(Shape{r.d}, DType::f32);
  const DType st = norm_stat_dtype(ctx.dtype());
  Tensor y = Tensor::empty(xs, ctx.dtype(), dev), mean = Tensor::empty(Shape{r.n}, st, dev),
         rstd = Tensor::empty(Shape{r.n}, st, dev);
  Tensor dx = Tensor::zeros(xs, ctx.dtype(), dev), dgamma = Tensor::zeros(Shape{r.d}, DType::f32, dev),
         dbeta = Tensor::zeros(Shape{r.d}, DType::f32, dev);
  const double s = double(dtype_size(ctx.dtype())), nd = double(r.n) * double(r.d), stat = 2.0 * r.n * dtype_size(st);
  const std::string shape = shape_text(xs);
  ctx.emit({.label = "fwd",
            .shape = shape,
            .timing = ctx.time([&] { layer_norm_forward(x, gamma, beta, y, mean, rstd); }),
            .bytes = 2 * nd * s + 2.0 * r.d * 4 + stat});
  ctx.emit({.label = "bwd",
            .shape = shape,
            .timing = ctx.time([&] { layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta); }),
            .bytes = 3 * nd * s + 3.0 * r.d * 4 + stat});
}

Rows vocab_rows(const BenchContext& ctx) { return ctx.pick(Rows{16384, 32000}, Rows{1024, 8000}, Rows{16, 100}); }

void softmax_case(BenchContext& ctx) {
  const Rows r = vocab_rows(ctx);
  const Shape xs{r.n, r.d};
  const Tensor x = ctx.random(xs, -4, 4), dy = ctx.random(xs), none;
  Tensor y = Tensor::empty(xs, ctx.dtype(), ctx.device()), dx = Tensor::zeros(xs, ctx.dtype(), ctx.device());
  const double nv_s = double(r.n) * double(r.d) * double(dtype_size(ctx.dtype()));
  ctx.emit({.label = "fwd",
            .shape = shape_text(xs),
            .timing = ctx.time([&] { softmax_forward(x, none, y); }),
            .bytes = 2 * nv_s});
  ctx.emit({.label = "bwd",
            .shape = shape_text(xs),
            .timing = ctx.time([&] { softmax_backward(y, dy, dx); }),
            .bytes = 3 * nv_s});
}

void cross_entropy_case(BenchContext& ctx) {
  const Rows r = vocab_rows(ctx);
  const Device dev = ctx.device();
  const Shape xs{r.n, r.d};
  const Tensor logits = ctx.random(xs, -4, 4), targets = ctx.classes(Shape{r.n}, r.d);
  const DType lt = cross_entropy_loss_dtype(ctx.dtype());
  Tensor loss = Tensor::empty(Shape{r.n}, lt, dev), lse = Tensor::empty(Shape{r.n}, lt, dev);
  const Tensor dloss = ctx.random(Shape{r.n}, lt, 0.5, 1.0);
  Tensor dlogits = Tensor::zeros(xs, ctx.dtype(), dev);
  const float smoothing = 0.1f;
  auto fwd = [&] { cross_entropy_forward(logits, targets, loss, lse, smoothing); };
  auto bwd = [&] { cross_entropy_backward(logits, targets, lse, dloss, dlogits, smoothing); };
  const double nv_s = double(r.n) * double(r.d) * double(dtype_size(ctx.dtype()));
  const double rows = 4.0 * r.n + 2.0 * r.n * dtype_size(lt);  // targets + two per-row values
  const double f_bytes = nv_s + rows, b_bytes = 2 * nv_s + rows;
  const std::string shape = shape_text(xs);
  ctx.emit({.label = "fwd", .shape = shape, .timing = ctx.time(fwd), .bytes = f_bytes});
  fwd();
  ctx.emit({.label = "bwd", .shape = shape, .timing = ctx.time(bwd), .bytes = b_bytes});
  ctx.emit({.label = "fwd+bwd",
            .shape = shape,
            .timing = ctx.time([&] {
              fwd();
              bwd();
            }),
            .bytes = f_bytes + b_bytes});
}
}  // namespace

std::vector<Case> norm_cases() {
  return {
      {"layer_norm", "layer norm over d = 512, forward and backward (f32 gamma, beta)", layer_norm_case},
      {"softmax", "softmax over a 32k vocabulary, forward and backward", softmax_case},
      {"cross_entropy", "fused log-softmax + cross-entropy (label smoothing 0.1) over a 32k vocabulary",
       cross_entropy_case},
  };
}

}  // namespace moe::bench
