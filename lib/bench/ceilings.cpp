// ceilings.h implementation. Covered by tests/bench/bench_test.cpp.
#include "bench/ceilings.h"

#include "bench/reference_gemm.h"
#include "tensor/allocator.h"

namespace moe::bench {

void measure_ceilings(BenchContext& ctx, Ceilings& ceilings) {
  ctx.set_case("ceiling");
  const int64_t copy_bytes = ctx.pick<int64_t>(int64_t{1} << 30, int64_t{64} << 20, int64_t{1} << 20);
  const int64_t n = ctx.pick<int64_t>(8192, 1024, 64);
  Row copy, gemm;
  {
    const Tensor src = ctx.random(Shape{copy_bytes / 4}, DType::f32);
    Tensor dst = Tensor::empty(src.shape(), DType::f32, ctx.device());
    copy = Row{.label = "copy",
               .shape = format_bytes(size_t(copy_bytes)),
               .dtype = "f32",
               .timing = ctx.time([&] { dst.copy_from(src); }),
               .bytes = 2.0 * double(copy_bytes),
               .note = "device-to-device copy, read + write"};
  }
  {
    const Tensor a = ctx.random(Shape{n, n}), b = ctx.random(Shape{n, n});
    const Tensor c = Tensor::empty(Shape{n, n}, ctx.dtype(), ctx.device());
    const std::string lib = reference_gemm_library(ctx.device());
    gemm = Row{.label = "gemm." + lib,
               .shape = shape_text(a.shape(), b.shape()),
               .timing = ctx.time(reference_gemm(a, b, c)),
               .flops = 2.0 * double(n) * double(n) * double(n),
               .note = lib + " GEMM, 2n^3 flops"};
  }
  ceilings.gbps = copy.gbps();
  ceilings.copy_shape = copy.shape;
  ceilings.tflops = gemm.tflops();
  ceilings.gemm_shape = gemm.shape;
  ctx.emit(copy);
  ctx.emit(gemm);
}

}  // namespace moe::bench
