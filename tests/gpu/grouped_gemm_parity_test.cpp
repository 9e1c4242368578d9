// CPU-vs-CUDA parity of the grouped (per-expert) GEMM, f32 (FMA tiles), bf16 and f16 (tensor cores),
// every kernel variant of each dtype (ops/kernel_variants.h: mma.sync, wgmma and wmma; wgmma where the
// operands' strides suit TMA), forward and gradients,
// with empty segments, sizes that are and are not multiples of 8/16/32 (vector and scalar load paths)
// and both layouts of w; the fused epilogue (alpha, a bias per expert, relu; its bias gradient is the
// device segment sum) on every variant and dtype. The hidden [.bench] case prints TFLOP/s at MoE shapes next to a dense
// GEMM of the same size.
#include <catch2/catch.hpp>
#include <cstdio>

#include "graph/expr/grouped_gemm.h"
#include "ops/matmul.h"
#include "support/kernel_variant.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor offsets_for(const std::vector<int32_t>& sizes) {
  std::vector<int32_t> off{0};
  for (int32_t s : sizes) off.push_back(off.back() + s);
  return Tensor::from_vector(off, Shape{int64_t(off.size())}, Device::cpu(), DType::i32);
}
/// 300 segments of 0..3 rows (a quarter of them empty).
std::vector<int32_t> many_experts() {
  std::vector<int32_t> s(300);
  for (size_t e = 0; e < s.size(); ++e) s[e] = static_cast<int32_t>((e * 7) % 4);
  return s;
}
}  // namespace

TEST_CASE("grouped_gemm parity", "[gpu][grouped_gemm]") {
  struct Case { std::vector<int32_t> sizes; int64_t k, m; };
  const Case cases[] = {{{0, 37, 0, 200, 1, 63}, 72, 136},  // vector loads, empty and 1-row segments
                        {{5, 0, 130, 17}, 37, 50},          // scalar loads (odd K and M)
                        {{300}, 64, 64},                    // one expert
                        {{129, 127, 0, 256, 3, 0, 90, 41}, 128, 40},
                        {{70, 0, 33, 129}, 64, 50},  // A with 16-byte loads, B scalar (M % 8 != 0)
                        {many_experts(), 16, 24}};   // 300 experts, mostly 0-3 rows: tile search
  uint32_t seed = 1;
  for (const Case& cs : cases)
    for (bool trans_w : {false, true}) {
      int64_t n = 0;
      for (int32_t s : cs.sizes) n += s;
      const int64_t e = int64_t(cs.sizes.size());
      Tensor x = test::random_tensor(Shape{n, cs.k}, seed++);
      Tensor w = test::random_tensor(trans_w ? Shape{e, cs.m, cs.k} : Shape{e, cs.k, cs.m}, seed++);
      Tensor off = offsets_for(cs.sizes);
      for (DType dt : test::kFloatTypes)
        for (const KernelVariant* v : kernel_variants(KernelOp::grouped_gemm, dt)) {
          if (v->needs_tma && (cs.k % 8 || cs.m % 8)) continue;  // TMA takes 16-byte strides only
          test::ForceKernel force(*v);
          INFO("rows " << n << " K " << cs.k << " M " << cs.m << " trans_w " << trans_w << " " << dtype_name(dt) << " "
                       << v->name());
          auto r = test::parity(
              {x, w, off},
              [=](Graph&, const std::vector<Expr>& in) { return grouped_matmul(in[0], in[1], in[2], trans_w); }, dt,
              {0, 1});
          CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
          CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
        }
    }
}

TEST_CASE("grouped_gemm epilogue parity: alpha, bias, relu", "[gpu][grouped_gemm][epilogue]") {
  struct Case {
    std::vector<int32_t> sizes;
    int64_t k, m;
    bool trans_w;
  };
  // Empty experts, rows that are not a multiple of the tiles; vector (and TMA) and scalar loads.
  const Case cases[] = {{{0, 37, 0, 130, 1}, 72, 136, false}, {{5, 0, 130, 17}, 37, 50, true}};
  struct Epi {
    float alpha;
    bool bias;
    GroupedActivation act;
  };
  const Epi epis[] = {{0.7f, true, GroupedActivation::relu},
                      {1.f, false, GroupedActivation::relu},
                      {1.3f, true, GroupedActivation::none}};
  uint32_t seed = 100;
  for (const Case& cs : cases) {
    int64_t n = 0;
    for (int32_t s : cs.sizes) n += s;
    const int64_t e = int64_t(cs.sizes.size());
    Tensor x = test::random_tensor(Shape{n, cs.k}, seed++);
    Tensor w = test::random_tensor(cs.trans_w ? Shape{e, cs.m, cs.k} : Shape{e, cs.k, cs.m}, seed++);
    Tensor b = test::random_tensor(Shape{e, cs.m}, seed++);
    Tensor off = offsets_for(cs.sizes);
    for (const Epi& ep : epis)
      for (DType dt : test::kFloatTypes)
        for (const KernelVariant* v : kernel_variants(KernelOp::grouped_gemm, dt)) {
          if (v->needs_tma && (cs.k % 8 || cs.m % 8)) continue;  // TMA takes 16-byte strides only
          test::ForceKernel force(*v);
          INFO("rows " << n << " K " << cs.k << " M " << cs.m << " trans_w " << cs.trans_w << " alpha " << ep.alpha
                       << " bias " << ep.bias << " relu " << (ep.act == GroupedActivation::relu) << " "
                       << dtype_name(dt) << " " << v->name());
          const bool trans_w = cs.trans_w;
          const float alpha = ep.alpha;
          const GroupedActivation act = ep.act;
          std::vector<Tensor> in{x, w, off};
          if (ep.bias) in.push_back(b);
          auto r = test::parity(
              in,
              [=](Graph&, const std::vector<Expr>& l) {
                return grouped_matmul(l[0], l[1], l[2], trans_w,
                                      GroupedMatmulEpilogue{alpha, l.size() > 3 ? l[3] : Expr(), act});
              },
              dt, ep.bias ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1});
          CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
          CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
        }
  }
}

TEST_CASE("grouped_gemm throughput at MoE shapes", "[.bench][gpu][grouped_gemm]") {
  const Device gpu = Device::cuda(0);
  for (int experts : {8, 32}) {
    const int64_t n = 16384 * 2, d = 512, h = 2048;
    std::vector<int32_t> sizes(size_t(experts), int32_t(n / experts));
    Tensor off = offsets_for(sizes).to(gpu);
    for (DType dt : {DType::bf16, DType::f32}) {
      Tensor x = Tensor::zeros(Shape{n, d}, dt, gpu), w = Tensor::zeros(Shape{experts, d, h}, dt, gpu);
      Tensor out = Tensor::empty(Shape{n, h}, dt, gpu), dense_w = Tensor::zeros(Shape{d, h}, dt, gpu);
      Tensor dw = Tensor::zeros(w.shape(), dt, gpu), none;
      const double flops = 2.0 * n * d * h;
      const double grouped = bench_gemm_tflops([&] { grouped_gemm_forward(x, w, off, out); }, flops, gpu);
      const double wgrad = bench_gemm_tflops([&] { grouped_gemm_backward(x, w, off, out, none, dw); }, flops, gpu);
      const double dense = bench_gemm_tflops([&] { matmul_forward(x, dense_w, out); }, flops, gpu);
      std::printf("E=%d %s: grouped fwd %.1f TFLOP/s, grouped dw %.1f, dense cuBLAS %.1f\n", experts,
                  dtype_name(dt), grouped, wgrad, dense);
    }
  }
  SUCCEED();
}
