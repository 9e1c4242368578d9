// CUDA emulator (emu/README.md): the checks shared by the emulated cuBLAS, cuBLASLt and cub, as strict
// as the libraries' documentation: the type combinations cublasGemmEx and cublasLtMatmul support per
// compute type, the bytes each operand spans (column-major rows x cols, leading dimension, batch
// stride), the aliasing rules (an output must not overlap an input, batches of an output must not
// overlap each other), and, when the queued call runs, that every operand lies in one live tensor of
// the handle's device and what the device-memory shadow says of it (never-written inputs, another
// stream's unordered result). Problems found when queued are api-misuse reports and the call's
// status; problems found when it runs are reports and the error of the next synchronisation.
// Covered by tests/emu/blind_spot_test.cpp and the matmul and sort parity tests.
#pragma once
#include <algorithm>
#include <string>

#include "cublas_v2.h"
#include "devices.h"
#include "gemm.h"
#include "global_shadow.h"
#include "memory.h"
#include "queue.h"
#include "reports.h"

namespace moe_emu {

/// cublasGemmEx's table (and cublasLtMatmul's, for the types moe uses): A and B of one type, C of
/// that type or f32 for 16-bit inputs; the FAST compute types and TF32 only over f32 throughout.
/// CUBLAS_COMPUTE_16F (half scalars) is not emulated.
inline bool gemm_types_ok(cublasComputeType_t compute, cudaDataType_t a, cudaDataType_t b, cudaDataType_t c) {
  if (a != b) return false;
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
      return (a == CUDA_R_32F && c == CUDA_R_32F) || ((a == CUDA_R_16F || a == CUDA_R_16BF) && (c == a || c == CUDA_R_32F));
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32: return a == CUDA_R_32F && c == CUDA_R_32F;
    default: return false;
  }
}

struct Span {
  uintptr_t begin = 0;
  size_t bytes = 0;
};
/// The bytes every batch of a column-major rows x cols operand spans.
inline Span operand_span(const GemmOperand& o, long long rows, long long cols, int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return {};
  const long long first = o.stride < 0 ? o.stride * (batch - 1) : 0;
  const long long last = (o.stride > 0 ? o.stride * (batch - 1) : 0) + (cols - 1) * o.ld + rows;
  return Span{reinterpret_cast<uintptr_t>(o.ptr) + uintptr_t(first * type_bytes(o.type)),
              size_t(last - first) * size_t(type_bytes(o.type))};
}
inline bool overlap(const Span& a, const Span& b) {
  return a.bytes && b.bytes && a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}
/// An aliasing rule broken (reported when queued).
inline bool aliasing(const std::string& call, const std::string& rule) {
  publish_api_report(ReportKind::api_misuse, call + ": " + rule + " (undefined results on a GPU)");
  return true;
}

/// When the queued call runs: [span] lies in one live tensor of `device`, then the shadow's view of
/// the access. Returns cudaSuccess, or the error to give (the report is published).
inline cudaError_t operand_runs(const std::string& call, const char* name, const Span& s, int device, const Op& op,
                                bool write, bool read) {
  if (!s.bytes) return cudaSuccess;
  const Located at = locate(s.begin, s.bytes);
  std::string problem = at.problem;
  if (at.ok && at.device != device && at.device != kHostDevice)
    problem = "memory of cuda:" + std::to_string(at.device) + ", but the handle belongs to cuda:" + std::to_string(device);
  else if (at.ok)
    problem.clear();
  if (!problem.empty())
    return set_message(cudaErrorIllegalAddress,
                       publish_api_report(ReportKind::out_of_bounds, call + ": operand " + name + " spans " +
                                                                         std::to_string(s.bytes) + " bytes that are " + problem));
  std::string shadow = read ? shadow_op_read(s.begin, s.bytes, op, true) : std::string();
  if (write) {
    const std::string w = shadow_op_write(s.begin, s.bytes, op);
    if (shadow.empty()) shadow = w;
  }
  if (shadow.empty()) return cudaSuccess;
  const ReportKind kind = shadow.find("never written") != std::string::npos ? ReportKind::uninitialized_read
                                                                             : ReportKind::stream_race;
  return set_message(cudaErrorLaunchFailure, publish_api_report(kind, call + ": operand " + name + ": " + shadow));
}

}  // namespace moe_emu
