// CUDA_CHECK / CUBLAS_CHECK: turn a failed runtime or cuBLAS call into a moe::Error that names
// the call, the error string and the source location. MOE_KERNEL_CHECK() after each launch.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "common/error.h"

#define CUDA_CHECK(expr)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (expr);                                                                    \
    if (err_ != cudaSuccess) MOE_FAIL("CUDA error in ", #expr, ": ", cudaGetErrorString(err_),     \
                                      " [", __FILE__, ":", __LINE__, "]");                        \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                        \
  do {                                                                                            \
    cublasStatus_t st_ = (expr);                                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) MOE_FAIL("cuBLAS error in ", #expr, ": ",                   \
                                               cublasGetStatusString(st_), " [", __FILE__, ":", __LINE__, "]"); \
  } while (0)

#define MOE_KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())
