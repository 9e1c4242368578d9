// CUDA dropout (lib/ops/dropout.h): each thread draws one Philox block (four uniforms) and handles
// the four elements it covers, with one packed load/store when the tensor is 4-aligned; f32 math
// over f32/bf16/f16 storage. The mask equals the CPU's bit for bit (same philox_uniform lanes).
// Covered by tests/gpu/dropout_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/dropout.h"

namespace moe::cuda {
namespace {

template <class T>
struct alignas(sizeof(T) * 4) Pack4 {
  T v[4];
};

/// Backward: dst += src * m * scale; forward: dst = src * m * scale. Vec: 4-aligned packs.
template <class T, bool Backward, bool Vec>
__global__ void dropout_kernel(const T* __restrict__ src, T* __restrict__ dst, long long n, float p, float scale,
                               unsigned long long seed, unsigned long long rng_stream) {
  const long long blocks = (n + 3) / 4;
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < blocks;
       b += (long long)gridDim.x * blockDim.x) {
    float u[4];
    philox_uniform4(seed, rng_stream, static_cast<uint64_t>(b), u);
    if constexpr (Vec) {
      const Pack4<T> s = reinterpret_cast<const Pack4<T>*>(src)[b];
      Pack4<T> d;
      if constexpr (Backward) d = reinterpret_cast<Pack4<T>*>(dst)[b];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float v = u[k] >= p ? to_float(s.v[k]) * scale : 0.f;
        d.v[k] = from_float<T>(Backward ? to_float(d.v[k]) + v : v);
      }
      reinterpret_cast<Pack4<T>*>(dst)[b] = d;
    } else {
      for (int k = 0; k < 4; ++k) {
        const long long i = 4 * b + k;
        if (i >= n) break;
        const float v = u[k] >= p ? to_float(src[i]) * scale : 0.f;
        dst[i] = from_float<T>(Backward ? to_float(dst[i]) + v : v);
      }
    }
  }
}

template <bool Backward>
void launch(const Tensor& src, Tensor& dst, float p, uint64_t seed, uint64_t rng_stream) {
  const long long n = src.numel();
  const float scale = 1.f / (1.f - p);
  const unsigned grid = grid_for((n + 3) / 4);
  cudaStream_t st = stream(src.device());
  MOE_FLOAT_SWITCH(src.dtype(), Backward ? "dropout backward" : "dropout", T, {
    const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(src.raw()) % (4 * sizeof(T)) == 0 &&
                     reinterpret_cast<uintptr_t>(dst.raw()) % (4 * sizeof(T)) == 0;
    const T* s = static_cast<const T*>(src.raw());
    T* d = static_cast<T*>(dst.raw());
    if (vec)
      dropout_kernel<T, Backward, true><<<grid, 256, 0, st>>>(s, d, n, p, scale, seed, rng_stream);
    else
      dropout_kernel<T, Backward, false><<<grid, 256, 0, st>>>(s, d, n, p, scale, seed, rng_stream);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace

void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream) {
  launch<false>(x, y, p, seed, rng_stream);
}

void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream) {
  launch<true>(dy, dx, p, seed, rng_stream);
}

}  // namespace moe::cuda
