// cuBLASLt side of lib/bench/reference_gemm.h. cuBLAS is column-major, so the row-major c = a @ b is
// computed as c^T[n,m] = b^T[n,k] @ a^T[k,m]: b, a and c are passed as column-major [n,k], [k,m], [n,m].
// The descriptors and the heuristic's first algorithm are made once, when the closure is built, so a
// timed call is one cublasLtMatmul launch. Covered by tests/gpu/bench_parity_test.cpp.
#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "bench/reference_gemm.h"
#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/matmul.h"

namespace moe::cuda {
namespace {
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int device = 0;
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

cudaDataType_t lt_type(DType dt) {
  switch (dt) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      MOE_FAIL("reference_gemm: cuBLASLt GEMMs take f32, bf16 or f16, not ", dtype_name(dt));
  }
}

uint32_t alignment_of(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a) a /= 2;
  return a;
}
}  // namespace

std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c) {
  const uint64_t m = uint64_t(a.shape()[0]), k = uint64_t(a.shape()[1]), n = uint64_t(b.shape()[1]);
  const cudaDataType_t t = lt_type(a.dtype());
  const cublasComputeType_t compute =
      a.dtype() == DType::f32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  auto plan = std::make_shared<LtPlan>();
  plan->device = a.device().index;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->la, t, n, k, int64_t(n)));  // b as column-major [n, k]
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lb, t, k, m, int64_t(k)));  // a as column-major [k, m]
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lc, t, n, m, int64_t(n)));  // c as column-major [n, m]
  plan->workspace = cublas_workspace(plan->device, &plan->workspace_bytes);
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&plan->pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &plan->workspace_bytes, sizeof(plan->workspace_bytes)));
  const uint32_t al_a = alignment_of(b.raw()), al_b = alignment_of(a.raw()), al_c = alignment_of(c.raw());
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                                    sizeof(al_a)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                                    sizeof(al_b)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c,
                                                    sizeof(al_c)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(plan->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c,
                                                    sizeof(al_c)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(cublas_lt(plan->device), plan->op, plan->la, plan->lb, plan->lc, plan->lc,
                                              plan->pref, 1, &result, &found));
  MOE_CHECK(found > 0, "reference_gemm: cuBLASLt has no algorithm for ", a.shape(), " @ ", b.shape(), " ",
            dtype_name(a.dtype()));
  plan->algo = result.algo;
  return [plan, a, b, c] {
    const float alpha = 1.f, beta = 0.f;
    CUBLAS_CHECK(cublasLtMatmul(cublas_lt(plan->device), plan->op, &alpha, b.raw(), plan->la, a.raw(), plan->lb, &beta,
                                c.raw(), plan->lc, c.raw(), plan->lc, &plan->algo, plan->workspace,
                                plan->workspace_bytes, stream(plan->device)));
  };
}

}  // namespace moe::cuda
