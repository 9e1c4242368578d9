// cache_gather on the GPU (semantics in lib/ops/cache_gather.h): one thread per unit of a copied column, in the
// widest unit (copy_units.cuh) dividing a column's bytes and both pointers, so a head of 64 bf16 moves as
// 16-byte vectors. Rows outside [0, R) are not read (the CPU entry point reports them; here they are skipped).
// Covered by tests/gpu/cache_gather_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "copy_units.cuh"
#include "ops/cache_gather.h"

namespace moe::cuda {
namespace {
template <class U>
__global__ void cache_gather_kernel(const U* __restrict__ src, const int32_t* __restrict__ rows, U* __restrict__ dst,
                                    long long n, int t, int r, long long units, long long src_cols,
                                    long long dst_cols) {
  const long long total = n * t * units;
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
       idx += (long long)gridDim.x * blockDim.x) {
    const long long u = idx % units, ij = idx / units, i = ij / t, j = ij % t;
    const int row = rows[ij];
    if (row < 0 || row >= r) continue;
    dst[(i * dst_cols + j) * units + u] = src[(row * src_cols + j) * units + u];
  }
}
}  // namespace

void cache_gather(const Tensor& store, const Tensor& rows, Tensor& out) {
  const long long n = rows.shape()[0], t = rows.shape()[1];
  const long long width = store.numel() / (store.shape()[0] * store.shape()[1]) * dtype_size(store.dtype());
  const int unit = pick_unit({width}, {store.raw(), out.raw()});
  with_unit(unit, [&](auto u) {
    using U = decltype(u);
    const long long units = width / unit;
    cache_gather_kernel<U><<<grid_for(n * t * units), 256, 0, stream(store.device())>>>(
        static_cast<const U*>(store.raw()), rows.data<int32_t>(), static_cast<U*>(out.raw()), n, int(t),
        int(store.shape()[0]), units, store.shape()[1], out.shape()[1]);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
