// Dense GEMMs: out = alpha * op(a) @ op(b) + beta * out, op(x) = x or x^T (last two axes), and
// linear: out = x[..., in] @ w[in, out] + bias[out]; bias_grad: dbias[j] += sum_i dout[i, j].
// Shapes (matmul_plan): 2-D @ 2-D; batched N-D @ N-D (equal leading axes); N-D a @ 2-D b (b shared,
// rows flattened when a is not transposed); 2-D a @ N-D b (a shared). CPU: OpenBLAS, a loop over
// the batch; CUDA: cuBLAS strided-batched GEMM / cuBLASLt with the bias fused in the epilogue.
// Covered by tests/ops/matmul_test.cpp and tests/gpu/matmul_parity_test.cpp.
#pragma once
#include <functional>

#include "tensor/tensor.h"

namespace moe {

/// How a (possibly batched) product maps onto `batch` row-major GEMMs of [m,k] @ [k,n] -> [m,n].
/// A stride of 0 means that operand is shared by every batch item. Strides are in elements.
struct MatmulPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  Shape out;
};
/// Checks the shapes (errors name `op` and both shapes) and returns the plan.
MatmulPlan matmul_plan(const Shape& a, const Shape& b, bool trans_a, bool trans_b, const char* op = "matmul");

namespace cpu {
void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b, float alpha, float beta);
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out);
void bias_grad(const Tensor& dout, Tensor& dbias);
}  // namespace cpu
namespace cuda {
void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b, float alpha, float beta);
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out);
void bias_grad(const Tensor& dout, Tensor& dbias);
}  // namespace cuda

/// out = alpha * op(a) @ op(b) + beta * out (out must exist with the plan's shape; with beta == 0
/// its old contents are ignored, even NaN). a, b, out: same dtype and device.
void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a = false, bool trans_b = false,
                    float alpha = 1.f, float beta = 0.f);
/// out[..., out] = x[..., in] @ w[in, out] (+ bias[out] when bias is defined).
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out);
/// dbias[j] += sum over rows i of dout[i, j] (dout viewed as [rows, dbias.numel()]).
void bias_grad(const Tensor& dout, Tensor& dbias);

/// Whether f32 GEMMs on the GPU may use TF32 tensor cores (env MOE_ALLOW_TF32=1, or set here).
bool allow_tf32();
void set_allow_tf32(bool allow);

/// Throughput of `fn` (which performs `flops` floating-point operations on `device`) in TFLOP/s:
/// one warm-up call, then `iters` timed calls between device synchronisations.
double bench_gemm_tflops(const std::function<void()>& fn, double flops, Device device, int iters = 20);

}  // namespace moe
