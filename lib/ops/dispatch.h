// How an op reaches its implementation: every op declares plain functions cpu::name(...) and
// cuda::name(...) with the same concrete signature (no templates across the .cpp/.cu boundary),
// and its public entry point calls MOE_DISPATCH(tensor, name, args...), which picks the one for
// the tensor's device. In a build without CUDA the cuda:: branch throws a clear error instead.
// Also the shared argument checks that name the op and the shapes involved.
#pragma once
#include "common/error.h"
#include "tensor/tensor.h"

namespace moe::detail {
[[noreturn]] inline void no_cuda_kernel(const char* op) {
  MOE_FAIL(op, ": a tensor is on a GPU but this moe build has no CUDA support");
}
}  // namespace moe::detail

#ifdef MOE_WITH_CUDA
#define MOE_DISPATCH(tensor, fn, ...) \
  ((tensor).device().is_cuda() ? ::moe::cuda::fn(__VA_ARGS__) : ::moe::cpu::fn(__VA_ARGS__))
#else
#define MOE_DISPATCH(tensor, fn, ...) \
  ((tensor).device().is_cuda() ? ::moe::detail::no_cuda_kernel(#fn) : ::moe::cpu::fn(__VA_ARGS__))
#endif

namespace moe {

/// All tensors on one device, else an error naming the op and the devices.
template <class... T>
void check_same_device(const char* op, const Tensor& first, const T&... rest) {
  auto one = [&](const Tensor& t) {
    MOE_CHECK(!t.defined() || t.device() == first.device(), op, ": tensors on different devices (", first.device(),
              " and ", t.device(), ")");
  };
  (one(rest), ...);
}

inline void check_shape(const char* op, const char* what, const Tensor& t, const Shape& expected) {
  MOE_CHECK(t.shape() == expected, op, ": ", what, " has shape ", t.shape(), " but ", expected, " is required");
}

inline void check_dtype(const char* op, const char* what, const Tensor& t, DType expected) {
  MOE_CHECK(t.dtype() == expected, op, ": ", what, " has dtype ", dtype_name(t.dtype()), " but ",
            dtype_name(expected), " is required");
}

/// CPU reference kernels compute in f32 or f64; anything else is an error naming the op.
inline void check_cpu_float(const char* op, const Tensor& t) {
  MOE_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, op, ": the CPU implementation supports f32 and f64, not ",
            dtype_name(t.dtype()), " (cast first)");
}

}  // namespace moe
