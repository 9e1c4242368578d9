// CUDA emulator: cuBLAS (emu/include/cublas_v2.h) over gemm.h. The checks are cuBLAS's (sizes >= 0,
// leading dimensions at least the stored rows, one type for A and B, a supported compute type) plus
// the emulator's: every matrix of every batch lies inside one device allocation of the handle's
// device (else a report and CUBLAS_STATUS_EXECUTION_FAILED). Covered by tests/gpu/matmul_parity_test.cpp
// and tests/emu.
#include <cstdio>
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
                                          cublasGemmAlgo_t) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) ||
      ldc < std::max(1, m) || transa > CUBLAS_OP_C || transb > CUBLAS_OP_C)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (a_type != b_type || !type_bytes(a_type) || !type_bytes(c_type) ||
      (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
       compute != CUBLAS_COMPUTE_32F_FAST_16F && compute != CUBLAS_COMPUTE_32F_FAST_16BF) ||
      (compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a_type != CUDA_R_32F))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const GemmOperand A{a, a_type, lda, stride_a}, B{b, b_type, ldb, stride_b}, C{c, c_type, ldc, stride_c};
  const char* call = "cublasGemmStridedBatchedEx";
  if (k > 0 && (!operand_ok(call, "A", A, ta ? k : m, ta ? m : k, batch, handle->device) ||
                !operand_ok(call, "B", B, tb ? n : k, tb ? k : n, batch, handle->device)))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (!operand_ok(call, "C", C, m, n, batch, handle->device)) return CUBLAS_STATUS_EXECUTION_FAILED;
  gemm_compute(ta, tb, m, n, k, *static_cast<const float*>(alpha), A, B, *static_cast<const float*>(beta), C, c, nullptr,
               batch, compute == CUBLAS_COMPUTE_32F_FAST_TF32);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* a, cudaDataType_t a_type, int lda, const void* b,
                            cudaDataType_t b_type, int ldb, const void* beta, void* c, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, a, a_type, lda, 0, b, b_type, ldb, 0, beta,
                                    c, c_type, ldc, 0, 1, compute, algo);
}
