// reference_gemm.h: argument checks, the CPU BLAS call, and the device switch (the cuBLASLt side is
// cuda/bench/reference_gemm.cu). Covered by tests/bench/bench_test.cpp.
#include "bench/reference_gemm.h"

#include <cblas.h>

#include "ops/dispatch.h"

namespace moe {
namespace cpu {
std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c) {
  const int m = int(a.shape()[0]), k = int(a.shape()[1]), n = int(b.shape()[1]);
  if (a.dtype() == DType::f64)
    return [a, b, c, m, n, k] {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a.data<double>(), k, b.data<double>(), n,
                  0.0, c.data<double>(), n);
    };
  check_cpu_float("reference_gemm", a);
  return [a, b, c, m, n, k] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data<float>(), k, b.data<float>(), n, 0.f,
                c.data<float>(), n);
  };
}
}  // namespace cpu

std::function<void()> reference_gemm(const Tensor& a, const Tensor& b, const Tensor& c) {
  constexpr const char* op = "reference_gemm";
  MOE_CHECK(a.shape().ndim() == 2 && b.shape().ndim() == 2 && a.shape()[1] == b.shape()[0], op, ": a ", a.shape(),
            " @ b ", b.shape(), " needs a [m,k] and b [k,n]");
  check_shape(op, "c", c, Shape{a.shape()[0], b.shape()[1]});
  check_dtype(op, "b", b, a.dtype());
  check_dtype(op, "c", c, a.dtype());
  check_same_device(op, a, b, c);
  MOE_CHECK(a.shape()[0] < INT32_MAX && a.shape()[1] < INT32_MAX && b.shape()[1] < INT32_MAX, op, ": sizes of ",
            a.shape(), " @ ", b.shape(), " exceed the BLAS int range");
#ifdef MOE_WITH_CUDA
  if (a.device().is_cuda()) return cuda::reference_gemm(a, b, c);
#else
  if (a.device().is_cuda()) detail::no_cuda_kernel(op);
#endif
  return cpu::reference_gemm(a, b, c);
}

const char* reference_gemm_library(Device device) { return device.is_cuda() ? "cublasLt" : "blas"; }

}  // namespace moe
