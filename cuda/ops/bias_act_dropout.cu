// CUDA kernels of the fused bias + activation + dropout (math in lib/ops/bias_act_dropout.h):
// each thread takes blocks of four elements, one Philox draw per block (the lanes of the CPU's and
// the dropout kernel's mask), f32 arithmetic over f32/bf16/f16 storage. Backward: one element-wise
// pass writes dz (a scratch tensor) and adds it into dx, then the bias gradient is bias_grad's
// column reduction of dz. Covered by tests/gpu/bias_act_dropout_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/bias_act_dropout.h"
#include "ops/matmul.h"
#include "ops/unary_math.h"

namespace moe::cuda {
namespace {

/// forward: y = act(x + b) * mask * scale; backward: dz = dy * mask * scale * act'(x + b), dx += dz.
template <class T, bool Backward>
__global__ void bias_act_dropout_kernel(const T* __restrict__ x, const T* __restrict__ b, const T* __restrict__ dy,
                                        T* __restrict__ out, T* __restrict__ dx, long long total, long long n,
                                        UnaryOp act, float p, float scale, unsigned long long seed,
                                        unsigned long long rng_stream) {
  const long long blocks = (total + 3) / 4;
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < blocks;
       q += (long long)gridDim.x * blockDim.x) {
    float u[4] = {1.f, 1.f, 1.f, 1.f};
    if (p > 0.f) philox_uniform4(seed, rng_stream, static_cast<uint64_t>(q), u);
    for (int k = 0; k < 4; ++k) {
      const long long i = 4 * q + k;
      if (i >= total) break;
      const float z = to_float(x[i]) + to_float(b[i % n]);
      const float keep = u[k] >= p ? scale : 0.f;
      if constexpr (Backward) {
        const float dz = to_float(dy[i]) * keep * unary_derivative<float>(act, z, 0.f, 1.f);
        out[i] = from_float<T>(dz);
        if (dx) dx[i] = from_float<T>(to_float(dx[i]) + dz);
      } else {
        out[i] = from_float<T>(unary_value<float>(act, z, 1.f, 0.f) * keep);
      }
    }
  }
}

template <bool Backward>
void launch(const Tensor& x, const Tensor& bias, const Tensor* dy, Tensor& out, Tensor* dx, UnaryOp act,
            DropoutMask m) {
  const long long total = x.numel(), n = bias.numel();
  const float scale = 1.f / (1.f - m.p);
  MOE_FLOAT_SWITCH(x.dtype(), "bias_act_dropout", T, {
    bias_act_dropout_kernel<T, Backward><<<grid_for((total + 3) / 4), 256, 0, stream(x.device())>>>(
        static_cast<const T*>(x.raw()), static_cast<const T*>(bias.raw()),
        dy ? static_cast<const T*>(dy->raw()) : nullptr, static_cast<T*>(out.raw()),
        dx ? static_cast<T*>(dx->raw()) : nullptr, total, n, act, m.p, scale, m.seed, m.rng_stream);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace

void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y) {
  launch<false>(x, bias, nullptr, y, nullptr, act, mask);
}

void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias) {
  Tensor dz = Tensor::empty(x.shape(), x.dtype(), x.device());
  launch<true>(x, bias, &dy, dz, dx, act, mask);
  if (dbias) moe::cuda::bias_grad(dz, *dbias);
}

}  // namespace moe::cuda
