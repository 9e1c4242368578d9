// CUDA emulator: cuBLASLt (emu/include/cublasLt.h) over gemm.h. The heuristic offers an algorithm when
// the layouts are valid (ld >= rows, one type for A and B and one for C and D) and every declared
// minimum alignment is at least the element size; the matmul then holds the caller to what the
// preference declared (a pointer less aligned than promised is a misaligned-address failure) and, with
// the BIAS epilogue, needs a 16-byte-aligned bias vector of D's type, as cuBLASLt's kernels do.
// Covered by tests/gpu/matmul_parity_test.cpp (linear with a misaligned bias) and tests/gpu/bench.
#include <cstring>
#include <string>

#include "blas_checks.h"
#include "cublasLt.h"

struct cublasLtContext {
  int device;
};
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};
struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D (cuBLASLt's default is 256)
};

using namespace moe_emu;

namespace {
template <class T>
bool take(void* dst, const void* value, size_t bytes) {
  if (bytes != sizeof(T)) return false;
  std::memcpy(dst, value, bytes);
  return true;
}
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a) a /= 2;
  return a;
}
bool layout_ok(const cublasLtMatrixLayoutOpaque_t* l) {
  return l && type_bytes(l->type) && l->ld >= int64_t(l->rows) && l->ld >= 1;
}
cublasStatus_t misaligned(const std::string& what) {
  publish_api_report(ReportKind::misaligned, "cublasLtMatmul: " + what);
  return CUBLAS_STATUS_EXECUTION_FAILED;
}
}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cublasLtContext{current_device()};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  if (scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  *desc = new cublasLtMatmulDescOpaque_t{compute};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attribute,
                                              const void* value, size_t bytes) {
  bool ok = false;
  switch (attribute) {
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = take<int32_t>(&d->transa, value, bytes); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = take<int32_t>(&d->transb, value, bytes); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = take<cublasLtEpilogue_t>(&d->epilogue, value, bytes); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = take<const void*>(&d->bias, value, bytes); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = take<int32_t>(&d->bias_type, value, bytes); break;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  *layout = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attribute, const void* value,
                                                    size_t bytes) {
  switch (attribute) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return take<uint64_t>(&p->max_workspace, value, bytes) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return take<uint32_t>(&p->align[attribute - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], value, bytes)
                 ? CUBLAS_STATUS_SUCCESS
                 : CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t* results, int* found) {
  *found = 0;
  if (!handle || !desc || !pref || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  if (!layout_ok(a) || !layout_ok(b) || !layout_ok(c) || !layout_ok(d) || a->type != b->type || c->type != d->type ||
      c->rows != d->rows || c->cols != d->cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  const uint32_t esize[4] = {uint32_t(type_bytes(a->type)), uint32_t(type_bytes(b->type)), uint32_t(type_bytes(c->type)),
                             uint32_t(type_bytes(d->type))};
  for (int i = 0; i < 4; ++i)
    if (pref->align[i] < esize[i]) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS && desc->bias_type != int32_t(d->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  std::memcpy(results[0].algo.data, pref->align, sizeof(pref->align));  // the algorithm remembers its promises
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t la, const void* b, cublasLtMatrixLayout_t lb, const void* beta,
                              const void* c, cublasLtMatrixLayout_t lc, void* d, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t) {
  if (!handle || !desc || !algo || !layout_ok(la) || !layout_ok(lb) || !layout_ok(lc) || !layout_ok(ld))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = desc->transa != CUBLAS_OP_N, tb = desc->transb != CUBLAS_OP_N;
  const int m = int(ld->rows), n = int(ld->cols), k = int(ta ? la->rows : la->cols);
  if (int(ta ? la->cols : la->rows) != m || int(tb ? lb->rows : lb->cols) != n || int(tb ? lb->cols : lb->rows) != k ||
      lc->rows != ld->rows || lc->cols != ld->cols || c != d || lc->ld != ld->ld)
    return CUBLAS_STATUS_INVALID_VALUE;  // the emulator supports C == D, as moe uses it
  uint32_t promised[4];
  std::memcpy(promised, algo->data, sizeof(promised));
  const void* ptrs[4] = {a, b, c, d};
  for (int i = 0; i < 4; ++i)
    if (alignment(ptrs[i]) < promised[i])
      return misaligned(std::string("operand ") + "ABCD"[i] + " is " + std::to_string(alignment(ptrs[i])) +
                        "-byte aligned, below the " + std::to_string(promised[i]) + " bytes its preference declared");
  const bool with_bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
  if (with_bias && alignment(desc->bias) < 16)
    return misaligned("the bias vector of the BIAS epilogue is " + std::to_string(alignment(desc->bias)) +
                      "-byte aligned; cuBLASLt's epilogue needs 16 bytes");
  const GemmOperand A{a, la->type, la->ld, 0}, B{b, lb->type, lb->ld, 0}, C{c, lc->type, lc->ld, 0};
  const char* call = "cublasLtMatmul";
  if (!operand_ok(call, "A", A, la->rows, la->cols, 1, handle->device) ||
      !operand_ok(call, "B", B, lb->rows, lb->cols, 1, handle->device) ||
      !operand_ok(call, "D", C, m, n, 1, handle->device) ||
      (with_bias && !operand_ok(call, "bias", GemmOperand{desc->bias, ld->type, m, 0}, m, 1, 1, handle->device)))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  gemm_compute(ta, tb, m, n, k, *static_cast<const float*>(alpha), A, B, *static_cast<const float*>(beta), C, d,
               with_bias ? desc->bias : nullptr, 1, desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32);
  return CUBLAS_STATUS_SUCCESS;
}
