// The baseline GEMM of moe-bench: c[m,n] = a[m,k] @ b[k,n] (row-major, no transposes) called on the
// vendor library directly, to compare the matmul op (lib/ops/matmul.h) against at the same shape and to
// measure the device's compute ceiling. CUDA: one cuBLASLt matmul (f32 accumulation, f32 tensor-core
// rules as in the matmul op, the heuristic's first algorithm, the 32 MiB per-device workspace), its
// descriptors and algorithm chosen once when the closure is made; CPU: cblas_sgemm / cblas_dgemm.
// FLOPs per call: 2*m*n*k. Covered by tests/bench/bench_test.cpp (CPU) and
// tests/gpu/bench_parity_test.cpp (cuBLASLt vs the matmul op).
#pragma once
#include <functional>

#include "tensor/tensor.h"

namespace moe {

namespace cpu {
std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c);
}  // namespace cpu
namespace cuda {
std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c);
}  // namespace cuda

/// A closure computing c = a @ b with the vendor library; a [m,k], b [k,n], c [m,n], one dtype and device.
/// The closure keeps the tensors alive and writes into c's memory.
std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c);
/// "cublasLt" on a GPU, "blas" (OpenBLAS) on the CPU.
const char* reference_gemm_library(Device device);

}  // namespace moe
