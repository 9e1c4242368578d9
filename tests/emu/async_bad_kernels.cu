// Deliberately misused tensor-core and asynchronous instructions (cuda/common/ptx.cuh) for the
// emulator's checker: tests/emu/async_checker_test.cpp checks that each misuse is reported with its
// kind, kernel, thread and the line marked "// @name" here, and that the correct twins draw none.
#include <cuda.h>
#include <cuda_runtime.h>

#include "common/ptx.cuh"
#include "common/tensor_map.cuh"
#include "emu/async_bad_kernels.h"

namespace moe::emu_test {
namespace {
using namespace moe::cuda::ptx;

int finish() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  cudaGetLastError();
  return int(e);
}

__global__ void ldmatrix_misaligned_kernel(float* out) {
  __shared__ __align__(16) uint16_t tile[32 * 8 + 8];
  for (int i = threadIdx.x; i < 32 * 8 + 8; i += 32) tile[i] = uint16_t(i);
  __syncthreads();
  uint32_t r[4];
  const int l = threadIdx.x;
  ldmatrix<4, false>(r, tile + 8 * l + (l == 3 ? 4 : 0));  // @ldm-misaligned
  out[l] = float(r[0]);
}

__global__ void mma_half_warp_kernel(float* out) {
  const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  const float c[4] = {0, 0, 0, 0};
  float d[4];
  if (threadIdx.x < 16) mma_m16n8k16<__nv_bfloat16>(d, a, b, c);  // @mma-half
  out[threadIdx.x] = threadIdx.x < 16 ? d[0] : 0.f;
}

/// 64x16 A and 16x8 B, K-major without swizzle, at shared offsets 0 and 2048, from global `src`.
__device__ void load_tiles(uint8_t* sm, const float* src) {
  for (int i = threadIdx.x; i < 2048 + 256; i += blockDim.x) {
    const float v = src ? src[i % 64] : 1.f;
    reinterpret_cast<__nv_bfloat16*>(sm)[i] = __float2bfloat16(v);
  }
}
__device__ uint64_t desc_a(uint8_t* sm) { return make_smem_desc(sm, 128, 256, Swizzle::none); }
__device__ uint64_t desc_b(uint8_t* sm) { return make_smem_desc(sm + 4096, 128, 256, Swizzle::none); }

__global__ void wgmma_accumulator_kernel(float* out, bool correct) {
  __shared__ __align__(1024) uint8_t sm[8192];
  load_tiles(sm, nullptr);
  fence_proxy_async();
  __syncthreads();
  float d[4] = {0, 0, 0, 0};
  wgmma_fence();
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);
  wgmma_commit();
  if (correct) wgmma_wait<0>();
  float early = d[0];  // @wgmma-early
  wgmma_wait<0>();
  out[threadIdx.x] = early + d[1];
}

__global__ void wgmma_without_fence_kernel(float* out) {
  __shared__ __align__(1024) uint8_t sm[8192];
  load_tiles(sm, nullptr);
  fence_proxy_async();
  __syncthreads();
  float d[4] = {0, 0, 0, 0};
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);  // @wgmma-no-fence
  wgmma_commit();
  wgmma_wait<0>();
  out[threadIdx.x] = d[0];
}

__global__ void wgmma_unfenced_kernel(float* out, bool correct) {
  __shared__ __align__(1024) uint8_t sm[8192];
  load_tiles(sm, nullptr);
  if (correct) fence_proxy_async();
  __syncthreads();
  float d[4] = {0, 0, 0, 0};
  wgmma_fence();
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);  // @wgmma-unfenced
  wgmma_commit();
  wgmma_wait<0>();
  out[threadIdx.x] = d[0];
}

__global__ void wgmma_tile_changed_kernel(float* out) {
  __shared__ __align__(1024) uint8_t sm[8192];
  load_tiles(sm, nullptr);
  fence_proxy_async();
  __syncthreads();
  float d[4] = {0, 0, 0, 0};
  wgmma_fence();
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);
  wgmma_commit();
  if (threadIdx.x == 0) sm[0] = 7;  // @wgmma-changed (the tile the wgmma reads, before its wait)
  wgmma_wait<0>();
  out[threadIdx.x] = d[0];
}

__global__ void wgmma_partial_kernel(float* out) {
  __shared__ __align__(1024) uint8_t sm[8192];
  load_tiles(sm, nullptr);
  fence_proxy_async();
  __syncthreads();
  float d[4] = {0, 0, 0, 0};
  if (threadIdx.x >= 96) return;
  wgmma_fence();
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);  // @wgmma-partial
  wgmma_commit();
  wgmma_wait<0>();
  out[threadIdx.x] = d[0];
}

__global__ void wgmma_not_landed_kernel(const __grid_constant__ CUtensorMap map, float* out, bool correct) {
  __shared__ __align__(1024) uint8_t sm[8192];
  __shared__ uint64_t bar;
  load_tiles(sm, nullptr);
  if (threadIdx.x == 0) mbarrier_init(&bar, 1);
  fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&bar, 2048);
    tma_load(sm, &map, &bar, 0, 0);  // A: 64 rows of 16 bf16
  }
  if (correct) mbarrier_wait(&bar, 0);
  float d[4] = {0, 0, 0, 0};
  wgmma_fence();
  wgmma<8, __nv_bfloat16, Major::K, Major::K>(d, desc_a(sm), desc_b(sm), true);  // @wgmma-not-landed
  wgmma_commit();
  wgmma_wait<0>();
  if (!correct) mbarrier_wait(&bar, 0);
  out[threadIdx.x] = d[0];
}

__global__ void mbarrier_arrivals_kernel(float* out) {
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) mbarrier_init(&bar, 2);
  __syncthreads();
  if (threadIdx.x == 0) mbarrier_arrive(&bar);
  mbarrier_wait(&bar, 0);  // @mbar-missing
  out[threadIdx.x] = 1.f;
}

__global__ void tma_bytes_kernel(const __grid_constant__ CUtensorMap map, float* out, int expect_bytes) {
  __shared__ __align__(128) uint8_t sm[2048];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) mbarrier_init(&bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&bar, uint32_t(expect_bytes));
    tma_load(sm, &map, &bar, 0, 0);
  }
  mbarrier_wait(&bar, 0);  // @tma-bytes
  out[threadIdx.x] = float(sm[threadIdx.x]);
}

__global__ void mbarrier_uninitialised_kernel(float* out) {
  __shared__ uint64_t bar;
  mbarrier_arrive(&bar);  // @mbar-uninit
  out[threadIdx.x] = 1.f;
}

__global__ void mbarrier_orders_kernel(float* out, bool wait) {
  __shared__ float value[32];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) mbarrier_init(&bar, 32);
  __syncthreads();
  if (threadIdx.x < 32) {
    value[threadIdx.x] = float(threadIdx.x);
    mbarrier_arrive(&bar);
  } else {
    if (wait) mbarrier_wait(&bar, 0);
    out[threadIdx.x - 32] = value[threadIdx.x - 32];  // @mbar-read
  }
}

__global__ void named_barrier_orders_kernel(float* out, bool barrier) {
  __shared__ float value[32];
  if (threadIdx.x < 32) {
    value[threadIdx.x] = float(threadIdx.x);
    if (barrier) named_barrier_arrive(1, 64);
  } else {
    if (barrier) named_barrier_sync(1, 64);
    out[threadIdx.x - 32] = value[threadIdx.x - 32];  // @named-read
  }
}

__global__ void named_barrier_bad_count_kernel(float* out) {
  named_barrier_sync(1, 48);  // @named-count
  out[threadIdx.x] = 1.f;
}

__global__ void __launch_bounds__(384, 1) setmaxnreg_kernel(float* out) {
  if (threadIdx.x >= 128) setmaxnreg<240, true>();  // @setmaxnreg
  __syncthreads();
  out[threadIdx.x] = 1.f;
}

__global__ void tma_misaligned_kernel(const __grid_constant__ CUtensorMap map, float* out) {
  __shared__ __align__(128) uint8_t sm[4096];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) mbarrier_init(&bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&bar, 2048);
    tma_load(sm + 64, &map, &bar, 0, 0);  // @tma-misaligned
  }
  mbarrier_wait(&bar, 0);
  out[threadIdx.x] = float(sm[threadIdx.x]);
}

/// A 64 x 16 bf16 tensor (2048 bytes) and a map whose box is all of it.
struct Tile {
  void* data = nullptr;
  CUtensorMap map{};
  Tile() {
    cudaMalloc(&data, 2048);
    cudaMemset(data, 0, 2048);
    const uint64_t dims[2] = {16, 64}, strides[1] = {32};
    const uint32_t box[2] = {16, 64};
    map = cuda::make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, data, 2, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  ~Tile() { cudaFree(data); }
};
}  // namespace

int ldmatrix_misaligned(float* out) { ldmatrix_misaligned_kernel<<<1, 32>>>(out); return finish(); }
int mma_half_warp(float* out) { mma_half_warp_kernel<<<1, 32>>>(out); return finish(); }
int wgmma_accumulator_early(float* out, bool correct) { wgmma_accumulator_kernel<<<1, 128>>>(out, correct); return finish(); }
int wgmma_without_fence(float* out) { wgmma_without_fence_kernel<<<1, 128>>>(out); return finish(); }
int wgmma_unfenced_smem(float* out, bool correct) { wgmma_unfenced_kernel<<<1, 128>>>(out, correct); return finish(); }
int wgmma_tile_changed(float* out) { wgmma_tile_changed_kernel<<<1, 128>>>(out); return finish(); }
int wgmma_partial_warpgroup(float* out) { wgmma_partial_kernel<<<1, 128>>>(out); return finish(); }
int wgmma_tile_not_landed(float* out, bool correct) {
  Tile t;
  wgmma_not_landed_kernel<<<1, 128>>>(t.map, out, correct);
  return finish();
}
int mbarrier_arrivals_missing(float* out) { mbarrier_arrivals_kernel<<<1, 32>>>(out); return finish(); }
int tma_bytes_mismatch(float* out, int expect_bytes) {
  Tile t;
  tma_bytes_kernel<<<1, 32>>>(t.map, out, expect_bytes);
  return finish();
}
int mbarrier_uninitialised(float* out) { mbarrier_uninitialised_kernel<<<1, 32>>>(out); return finish(); }
int mbarrier_orders(float* out, bool wait) { mbarrier_orders_kernel<<<1, 64>>>(out, wait); return finish(); }
int named_barrier_orders(float* out, bool barrier) { named_barrier_orders_kernel<<<1, 64>>>(out, barrier); return finish(); }
int named_barrier_bad_count(float* out) { named_barrier_bad_count_kernel<<<1, 64>>>(out); return finish(); }
int setmaxnreg_overdrawn(float* out) { setmaxnreg_kernel<<<1, 384>>>(out); return finish(); }
int tma_misaligned(float* out) {
  Tile t;
  tma_misaligned_kernel<<<1, 32>>>(t.map, out);
  return finish();
}

}  // namespace moe::emu_test
