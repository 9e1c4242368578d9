// CUDA emulator: cuBLAS (emu/include/cublas_v2.h) over gemm.h. When called: cuBLAS's checks (sizes
// >= 0, leading dimensions at least the stored rows, the documented type combinations of the compute
// type) and its aliasing rules (C must not overlap A or B, nor its own batches): a broken one is an
// api-misuse report and an error status. The product is queued on the handle's stream (queue.h);
// when it runs, every matrix of every batch must lie inside one live tensor of the handle's device and
// the inputs must have been written (blas_checks.h), else a report and the error of the next
// synchronisation. Covered by tests/gpu/matmul_parity_test.cpp and tests/emu/blind_spot_test.cpp.
#include <cstdio>
#include <source_location>
#include <string>

#include "blas_checks.h"
#include "cublas_v2.h"
#include "devices.h"
#include "gemm.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  int device = 0;
};

using namespace moe_emu;

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext{nullptr, current_device()};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* a, cudaDataType_t a_type,
                                          int lda, long long stride_a, const void* b, cudaDataType_t b_type, int ldb,
                                          long long stride_b, const void* beta, void* c, cudaDataType_t c_type, int ldc,
                                          long long stride_c, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t, std::source_location site) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) ||
      ldc < std::max(1, m) || transa > CUBLAS_OP_C || transb > CUBLAS_OP_C)
    return CUBLAS_STATUS_INVALID_VALUE;
  const std::string call = "cublasGemmStridedBatchedEx at " + call_site(site.file_name(), site.line());
  if (!gemm_types_ok(compute, a_type, b_type, c_type)) {
    publish_api_report(ReportKind::api_misuse, call + ": compute type " + std::to_string(compute) + " with A type " +
                                                   std::to_string(a_type) + ", B type " + std::to_string(b_type) +
                                                   " and C type " + std::to_string(c_type) +
                                                   " is not a combination cublasGemmEx supports");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const GemmOperand A{a, a_type, lda, stride_a}, B{b, b_type, ldb, stride_b}, C{c, c_type, ldc, stride_c};
  const Span sa = k ? operand_span(A, ta ? k : m, ta ? m : k, batch) : Span{},
             sb = k ? operand_span(B, tb ? n : k, tb ? k : n, batch) : Span{}, sc = operand_span(C, m, n, batch);
  if ((overlap(sc, sa) && aliasing(call, "C overlaps A")) || (overlap(sc, sb) && aliasing(call, "C overlaps B")) ||
      (batch > 1 && std::llabs(stride_c) < 1LL * ldc * (n - 1) + m && aliasing(call, "the batches of C overlap")))
    return CUBLAS_STATUS_INVALID_VALUE;
  const float fa = *static_cast<const float*>(alpha), fb = *static_cast<const float*>(beta);  // host scalars: read now
  const int device = handle->device;
  enqueue(stream_id(handle->stream), OpKind::library, call, [=](const Op& op) {
    for (cudaError_t e : {operand_runs(call, "A", sa, device, op, false, true), operand_runs(call, "B", sb, device, op, false, true),
                          operand_runs(call, "C", sc, device, op, true, fb != 0.f)})
      if (e != cudaSuccess) return e;
    gemm_compute(ta, tb, m, n, k, fa, A, B, fb, C, c, nullptr, batch, compute == CUBLAS_COMPUTE_32F_FAST_TF32);
    return cudaSuccess;
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* a, cudaDataType_t a_type, int lda, const void* b,
                            cudaDataType_t b_type, int ldb, const void* beta, void* c, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo, std::source_location site) {
  return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, a, a_type, lda, 0, b, b_type, ldb, 0, beta,
                                    c, c_type, ldc, 0, 1, compute, algo, site);
}
