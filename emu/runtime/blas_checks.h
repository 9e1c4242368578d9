// CUDA emulator (emu/README.md): the operand check shared by the emulated cuBLAS and cuBLASLt: every
// batch of a column-major rows x cols matrix (leading dimension ld) lies inside one live device
// allocation of `device`; otherwise a report naming the call and operand (the call then returns
// CUBLAS_STATUS_EXECUTION_FAILED; the emulator keeps no sticky CUDA error, unlike a faulted GPU
// context, so later work still runs). Covered by tests/emu/checker_test.cpp.
#pragma once
#include <string>

#include "devices.h"
#include "gemm.h"
#include "memory.h"
#include "reports.h"

namespace moe_emu {

inline bool operand_ok(const char* call, const char* name, const GemmOperand& o, long long rows, long long cols,
                       int batch, int device) {
  if (rows == 0 || cols == 0) return true;
  const long long first = o.stride < 0 ? o.stride * (batch - 1) : 0;
  const long long last = (o.stride > 0 ? o.stride * (batch - 1) : 0) + (cols - 1) * o.ld + rows;
  const size_t bytes = size_t(last - first) * size_t(type_bytes(o.type));
  const auto begin = reinterpret_cast<uintptr_t>(o.ptr) + uintptr_t(first * type_bytes(o.type));
  const Located at = locate(begin, bytes);
  std::string problem = at.problem;
  if (at.ok && at.device != device && at.device != kHostDevice)
    problem = "memory of cuda:" + std::to_string(at.device) + ", but the handle belongs to cuda:" + std::to_string(device);
  else if (at.ok)
    return true;
  const std::string text = std::string(call) + ": operand " + name + " (" + std::to_string(rows) + " x " +
                           std::to_string(cols) + ", ld " + std::to_string(o.ld) + ", " + std::to_string(batch) +
                           " batches) spans " + std::to_string(bytes) + " bytes that are " + problem;
  publish_api_report(ReportKind::out_of_bounds, text);
  return false;
}

}  // namespace moe_emu
