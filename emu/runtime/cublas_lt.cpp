// CUDA emulator: cuBLASLt (emu/include/cublasLt.h) over gemm.h. The heuristic offers an algorithm when
// the layouts are valid (ld >= rows), the types are a documented combination for the compute type
// (blas_checks.h), the bias of the BIAS epilogue has D's type and every declared minimum alignment is
// at least the element size; it answers CUBLAS_STATUS_NOT_SUPPORTED otherwise, and always when
// MOE_EMU_LT_HEURISTIC=none (or set_lt_heuristic_offers(false)), so that callers' fallbacks run. Its
// algorithm needs a workspace for split-K shapes (k >= 8 max(m, n)) when the preference allows one.
// The matmul then holds the caller to what the preference declared (a pointer less aligned than
// promised is a misaligned-address failure), to the algorithm's workspace size, to a 16-byte-aligned
// bias vector, and to the aliasing rules (D may be C with C's layout, and must not overlap A, B or
// the bias); it is queued on its stream, and when it runs its operands and workspace must lie in live
// tensors of the handle's device (blas_checks.h). Covered by tests/gpu/matmul_parity_test.cpp (linear
// with a misaligned bias), tests/gpu/bench and tests/emu/blind_spot_test.cpp.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "blas_checks.h"
#include "cublasLt.h"
#include "moe_emu/control.h"

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
std::atomic<bool>& heuristic_offers() {
  static std::atomic<bool> offers = [] {
    const char* v = std::getenv("MOE_EMU_LT_HEURISTIC");
    return !(v && std::string(v) == "none");
  }();
  return offers;
}
constexpr int kWorkspaceSlot = 4;  // algo.data[4]: the workspace the algorithm needs
}  // namespace

namespace moe_emu {
bool set_lt_heuristic_offers(bool offers) { return heuristic_offers().exchange(offers); }
}  // namespace moe_emu

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
  if (!layout_ok(a) || !layout_ok(b) || !layout_ok(c) || !layout_ok(d) || c->type != d->type ||
      c->rows != d->rows || c->cols != d->cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!heuristic_offers() || !gemm_types_ok(desc->compute, a->type, b->type, d->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const uint32_t esize[4] = {uint32_t(type_bytes(a->type)), uint32_t(type_bytes(b->type)), uint32_t(type_bytes(c->type)),
                             uint32_t(type_bytes(d->type))};
  for (int i = 0; i < 4; ++i)
    if (pref->align[i] < esize[i]) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS && desc->bias_type != int32_t(d->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  std::memcpy(results[0].algo.data, pref->align, sizeof(pref->align));  // the algorithm remembers its promises
  const uint64_t m = d->rows, n = d->cols, k = desc->transa != CUBLAS_OP_N ? a->rows : a->cols;
  const uint64_t split_k = k >= 8 * std::max(m, n) ? m * n * 4 * 4 : 0;  // partial sums of 4 slices
  results[0].workspaceSize = split_k <= pref->max_workspace ? split_k : 0;
  results[0].algo.data[kWorkspaceSlot] = results[0].workspaceSize;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t la, const void* b, cublasLtMatrixLayout_t lb, const void* beta,
                              const void* c, cublasLtMatrixLayout_t lc, void* d, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                              cudaStream_t stream, std::source_location site) {
  if (!handle || !desc || !algo || !layout_ok(la) || !layout_ok(lb) || !layout_ok(lc) || !layout_ok(ld))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = desc->transa != CUBLAS_OP_N, tb = desc->transb != CUBLAS_OP_N;
  const int m = int(ld->rows), n = int(ld->cols), k = int(ta ? la->rows : la->cols);
  if (int(ta ? la->cols : la->rows) != m || int(tb ? lb->rows : lb->cols) != n || int(tb ? lb->cols : lb->rows) != k ||
      lc->rows != ld->rows || lc->cols != ld->cols || c != d || lc->ld != ld->ld)
    return CUBLAS_STATUS_INVALID_VALUE;  // the emulator supports C == D, as moe uses it
  if (!gemm_types_ok(desc->compute, la->type, lb->type, ld->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const uint64_t needed = algo->data[kWorkspaceSlot];
  if (workspace_bytes < needed || (needed && !workspace)) return CUBLAS_STATUS_INVALID_VALUE;
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
  const std::string call = "cublasLtMatmul at " + call_site(site.file_name(), site.line());
  const GemmOperand A{a, la->type, la->ld, 0}, B{b, lb->type, lb->ld, 0}, C{c, lc->type, lc->ld, 0};
  const Span sa = operand_span(A, int64_t(la->rows), int64_t(la->cols), 1),
             sb = operand_span(B, int64_t(lb->rows), int64_t(lb->cols), 1), sd = operand_span(C, m, n, 1),
             sbias = with_bias ? operand_span(GemmOperand{desc->bias, ld->type, m, 0}, m, 1, 1) : Span{},
             sws{reinterpret_cast<uintptr_t>(workspace), size_t(needed)};
  if ((overlap(sd, sa) && aliasing(call, "D overlaps A")) || (overlap(sd, sb) && aliasing(call, "D overlaps B")) ||
      (overlap(sd, sbias) && aliasing(call, "D overlaps the bias")) ||
      ((overlap(sws, sa) || overlap(sws, sb) || overlap(sws, sd)) && aliasing(call, "the workspace overlaps an operand")))
    return CUBLAS_STATUS_INVALID_VALUE;
  const float fa = *static_cast<const float*>(alpha), fb = *static_cast<const float*>(beta);
  const int device = handle->device;
  const cublasComputeType_t compute = desc->compute;
  const void* bias = with_bias ? desc->bias : nullptr;
  enqueue(stream_id(stream), OpKind::library, call, [=](const Op& op) {
    for (cudaError_t e : {operand_runs(call, "A", sa, device, op, false, true), operand_runs(call, "B", sb, device, op, false, true),
                          operand_runs(call, "bias", sbias, device, op, false, true),
                          operand_runs(call, "workspace", sws, device, op, true, false),
                          operand_runs(call, "D", sd, device, op, true, fb != 0.f)})
      if (e != cudaSuccess) return e;
    gemm_compute(ta, tb, m, n, k, fa, A, B, fb, C, d, bias, 1, compute == CUBLAS_COMPUTE_32F_FAST_TF32);
    return cudaSuccess;
  });
  return CUBLAS_STATUS_SUCCESS;
}
