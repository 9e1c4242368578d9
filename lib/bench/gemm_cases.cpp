// GEMM cases: the matmul op (lib/ops/matmul.h: cublasGemmStridedBatchedEx on CUDA) against a direct
// vendor call of the same shape (reference_gemm.h: cuBLASLt on CUDA, BLAS on the CPU), at the
// transformer-base shapes: the FFN up and down projections of 16384 tokens, the 32k-vocabulary output
// projection, and 8192^3. c[m,n] = a[m,k] @ b[k,n]; FLOPs = 2*m*n*k per call. The matmul row's note
// says how far its first rows are from the reference's (max |diff| / max |ref|), a guard against timing
// a wrong result. Covered by tests/bench/bench_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/cases.h"
#include "bench/reference_gemm.h"
#include "ops/matmul.h"

namespace moe::bench {
namespace {
struct GemmShape {
  int64_t m, k, n;
};

double max_rel_diff(const Tensor& x, const Tensor& ref, int64_t rows) {
  const std::vector<double> a = x.rows(0, rows).to_vector<double>(), b = ref.rows(0, rows).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

Case gemm_case(const char* name, const char* what, GemmShape full, GemmShape small, GemmShape tiny) {
  return {name, what, [=](BenchContext& ctx) {
            const GemmShape s = ctx.pick(full, small, tiny);
            const Tensor a = ctx.random(Shape{s.m, s.k}), b = ctx.random(Shape{s.k, s.n});
            Tensor c = Tensor::empty(Shape{s.m, s.n}, ctx.dtype(), ctx.device());
            Tensor c_ref = Tensor::empty(Shape{s.m, s.n}, ctx.dtype(), ctx.device());
            const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
            const std::string lib = reference_gemm_library(ctx.device());
            const auto ref = reference_gemm(a, b, c_ref);
            Row r{.label = lib, .shape = shape_text(a.shape(), b.shape()), .timing = ctx.time(ref), .flops = flops};
            const double ref_ms = r.timing.median_ms;
            ctx.emit(r);
            r.label = "matmul";
            r.timing = ctx.time([&] { matmul_forward(a, b, c); });
            r.ratio = r.timing.median_ms / ref_ms;
            r.baseline = lib;
            char note[64];
            std::snprintf(note, sizeof note, "max rel diff vs %s %.1e", lib.c_str(),
                          max_rel_diff(c, c_ref, std::min<int64_t>(s.m, 8)));
            r.note = note;
            ctx.emit(r);
          }};
}
}  // namespace

std::vector<Case> gemm_cases() {
  return {
      gemm_case("gemm.ffn_up", "FFN up projection [tokens x d] @ [d x 4d]", {16384, 512, 2048}, {1024, 256, 1024},
                {64, 32, 128}),
      gemm_case("gemm.ffn_down", "FFN down projection [tokens x 4d] @ [4d x d]", {16384, 2048, 512}, {1024, 1024, 256},
                {64, 128, 32}),
      gemm_case("gemm.vocab", "output projection onto a 32k vocabulary", {16384, 512, 32000}, {1024, 256, 8000},
                {64, 32, 250}),
      gemm_case("gemm.square", "square GEMM (8192^3 on a GPU)", {8192, 8192, 8192}, {1024, 1024, 1024}, {64, 64, 64}),
  };
}

}  // namespace moe::bench
