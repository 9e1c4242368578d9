// The kernel variant table (ops/kernel_variants.h): the default choice per dtype and architecture,
// forcing a variant and the errors for one that cannot run, MOE_KERNEL's syntax.
#include "ops/kernel_variants.h"

#include <catch2/catch.hpp>

#include "support/kernel_variant.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

TEST_CASE("the variant table chooses by dtype and architecture", "[kernel_variants]") {
  CHECK(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 80).impl == KernelImpl::mma);
  CHECK(choose_kernel(KernelOp::grouped_gemm, DType::f16, 90).impl == KernelImpl::mma);
  CHECK(choose_kernel(KernelOp::grouped_gemm, DType::f32, 90).impl == KernelImpl::simt);
  // attention on sm_90: wgmma where the build has sm_90a code and the call fits it, else mma.
  for (KernelOp op : {KernelOp::attention_forward, KernelOp::attention_backward}) {
    CHECK(choose_kernel(op, DType::bf16, 90).impl == (cuda::has_sm90a_code() ? KernelImpl::wgmma : KernelImpl::mma));
    CHECK(choose_kernel(op, DType::bf16, 90, KernelShape{false}).impl == KernelImpl::mma);
  }
  CHECK(choose_kernel(KernelOp::attention_forward, DType::f16, 80).impl == KernelImpl::mma);
  CHECK(choose_kernel(KernelOp::attention_backward, DType::f16, 80).impl == KernelImpl::mma);
  CHECK(kernel_variants(KernelOp::attention_forward, DType::bf16).size() == 3);  // wgmma, mma, then wmma
  CHECK(kernel_variants(KernelOp::attention_backward, DType::bf16).size() == 3);
  CHECK(choose_kernel(KernelOp::attention_backward, DType::f32, 70).impl == KernelImpl::simt);
  CHECK_THROWS_WITH(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 75),
                    Catch::Contains("no kernel variant runs bf16 on compute capability 7.5"));
  for (const KernelVariant& v : kernel_variants()) {
    INFO(v.name());
    CHECK(!v.kernels.empty());
    CHECK(!v.dtypes.empty());
    CHECK(v.sass() == (v.impl == KernelImpl::simt ? "" : v.impl == KernelImpl::wgmma ? "HGMMA" : "HMMA"));
  }
}

TEST_CASE("a forced variant runs, or fails naming why", "[kernel_variants]") {
  const auto variants = kernel_variants(KernelOp::grouped_gemm, DType::bf16);
  REQUIRE(variants.size() >= 2);
  for (const KernelVariant* v : variants) {
    test::ForceKernel force(*v);
    CHECK(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 90).impl == v->impl);
  }
  CHECK(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 90).impl == KernelImpl::mma);  // released
  const KernelVariant& simt = *kernel_variants(KernelOp::grouped_gemm, DType::f32).front();
  test::ForceKernel force(simt);
  CHECK_THROWS_WITH(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 90),
                    Catch::Contains("MOE_KERNEL forces grouped_gemm:simt, which does not run bf16"));
  force_kernel_variant(KernelOp::grouped_gemm, KernelImpl::wgmma);  // TMA's operands, or sm_90a code, missing
  CHECK_THROWS_WITH(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 90, KernelShape{false}),
                    Catch::Contains("MOE_KERNEL forces grouped_gemm:wgmma"));
  force_kernel_variant(KernelOp::grouped_gemm, std::nullopt);
  CHECK(choose_kernel(KernelOp::grouped_gemm, DType::bf16, 90, KernelShape{false}).impl == KernelImpl::mma);
  force_kernel_variant(KernelOp::attention_backward, KernelImpl::wgmma);  // on sm_80, or a call it does not take
  CHECK_THROWS_WITH(choose_kernel(KernelOp::attention_backward, DType::bf16, 80),
                    Catch::Contains("MOE_KERNEL forces attention_backward:wgmma, which does not run bf16"));
  if (cuda::has_sm90a_code())
    CHECK_THROWS_WITH(choose_kernel(KernelOp::attention_backward, DType::bf16, 90, KernelShape{false}),
                      Catch::Contains("MOE_KERNEL forces attention_backward:wgmma"));
  force_kernel_variant(KernelOp::attention_backward, std::nullopt);
}

TEST_CASE("MOE_KERNEL's syntax", "[kernel_variants]") {
  const auto o = parse_kernel_overrides("grouped_gemm:wmma,attention_forward:simt,");
  REQUIRE(o.size() == 2);
  CHECK(o[0] == std::make_pair(KernelOp::grouped_gemm, KernelImpl::wmma));
  CHECK(o[1] == std::make_pair(KernelOp::attention_forward, KernelImpl::simt));
  CHECK_THROWS_WITH(parse_kernel_overrides("grouped_gemm"), Catch::Contains("'grouped_gemm' is not op:variant"));
  CHECK_THROWS_WITH(parse_kernel_overrides("gemm:mma"), Catch::Contains("MOE_KERNEL op: 'gemm' is not one of"));
  CHECK_THROWS_WITH(
      parse_kernel_overrides("grouped_gemm:tensor"),
      Catch::Contains("MOE_KERNEL variant of grouped_gemm: 'tensor' is not one of simt | wmma | mma | wgmma"));
}
