// CUDA categorical sampling (lib/ops/categorical.h): one thread per row walks its n weights twice
// (sum, then the inverse-CDF scan) in index order with f32 accumulation over f32/bf16/f16 storage,
// with the same Philox uniform and the same categorical_pick as the CPU, so both draw the same.
// Covered by tests/gpu/categorical_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/categorical.h"

namespace moe::cuda {
namespace {
constexpr int kThreads = 256;

template <class T>
struct RowLoad {
  const T* row;
  __device__ float operator()(int e) const { return to_float(row[e]); }
};

template <class T>
__global__ void categorical_sample_kernel(const T* __restrict__ probs, int32_t* __restrict__ out, long long rows, int n,
                                          unsigned long long seed, unsigned long long stream) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
       r += (long long)gridDim.x * blockDim.x) {
    const float u = philox_uniform(seed, stream, static_cast<uint64_t>(r));
    out[r] = categorical_pick<float>(RowLoad<T>{probs + r * n}, n, u);
  }
}
}  // namespace

void categorical_sample(const Tensor& probs, Tensor& out, uint64_t seed, uint64_t stream_id) {
  const long long rows = out.numel();
  const int n = static_cast<int>(probs.shape().last());
  MOE_FLOAT_SWITCH(probs.dtype(), "categorical_sample", T, {
    categorical_sample_kernel<T><<<grid_for(rows, kThreads), kThreads, 0, stream(probs.device())>>>(
        static_cast<const T*>(probs.raw()), static_cast<int32_t*>(out.raw()), rows, n, seed, stream_id);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
