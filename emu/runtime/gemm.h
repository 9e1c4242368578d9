// CUDA emulator (emu/README.md): the GEMM behind the emulated cuBLAS and cuBLASLt. Column-major
// D = alpha op(A) op(B) + beta C (+ bias[row]) with f32 accumulation over f32, bf16 or f16 storage,
// through OpenBLAS sgemm; TF32 compute rounds A and B to TF32 first. Covered by the matmul parity tests.
#pragma once
#include <cstdint>

#include "library_types.h"

namespace moe_emu {

struct GemmOperand {
  const void* ptr;
  cudaDataType_t type;
  long long ld, stride;  // leading dimension and batch stride, in elements
};

void gemm_compute(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const GemmOperand& a,
                  const GemmOperand& b, float beta, const GemmOperand& c, void* d, const void* bias, int batch,
                  bool tf32);

/// Bytes per element of a cuBLAS data type (0: unsupported).
int type_bytes(cudaDataType_t type);

}  // namespace moe_emu
