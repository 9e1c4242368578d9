// Kernels with deliberate bugs (and their correct twins) for tests/emu/checker_test.cpp: each bug is
// one the emulator's checker must name with its kind, block, thread and source line (the lines carry
// "@name" markers the test looks up). Plain CUDA: it would compile with nvcc too.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "bad_kernels.h"

namespace {

__global__ void neighbour_kernel(int* out, bool barrier) {
  __shared__ int s[64];
  s[threadIdx.x] = int(threadIdx.x) * 3;  // @race-write
  if (barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];  // @race-read
}

__global__ void oob_global_kernel(float* out, int n) {
  out[threadIdx.x + n] = 1.f;  // @oob-global
}

__global__ void oob_shared_kernel(int* out) {
  __shared__ int s[32];
  s[threadIdx.x] = 1;  // @oob-shared
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x % 32];
}

__global__ void divergent_exit_kernel(int* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();  // @divergent-exit
  out[threadIdx.x] = 1;
}

__global__ void divergent_sites_kernel(int* out) {
  if (threadIdx.x < 16) {
    out[threadIdx.x] = 1;
    __syncthreads();  // @divergent-a
  } else {
    __syncthreads();  // @divergent-b
    out[threadIdx.x] = 2;
  }
}

__global__ void uninitialized_kernel(int* out) {
  __shared__ int s[64];
  if (threadIdx.x < 32) s[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];  // @uninitialized
}

__global__ void same_value_kernel(int* out) {
  __shared__ int flag;
  flag = 7;  // every thread writes the same value: allowed
  __syncthreads();
  out[threadIdx.x] = flag;
}

__global__ void warp_order_kernel(int* out, bool syncwarp, bool shuffle) {
  __shared__ int s[32];
  if (threadIdx.x == 0) s[0] = 42;
  if (syncwarp) __syncwarp();
  if (shuffle) out[1 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1);  // orders no memory
  if (threadIdx.x == 1) out[0] = s[0];  // @warp-read
}

__global__ void async_copy_kernel(const float* in, float* out, bool wait) {
  __shared__ __align__(16) float tile[64 * 4];
  __pipeline_memcpy_async(tile + threadIdx.x * 4, in + threadIdx.x * 4, 16);
  __pipeline_commit();
  if (wait) __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = tile[((threadIdx.x + 1) % 64) * 4];  // @async-read
}

__global__ void shuffle_deadlock_kernel(int* out) {
  int v = int(threadIdx.x);
  if (threadIdx.x < 16) v += __shfl_xor_sync(0xffffffffu, v, 1);  // @shuffle-deadlock
  out[threadIdx.x] = v;
}

__global__ void misaligned_kernel(const float* in, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(in + 1);  // @misaligned
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

__global__ void __launch_bounds__(64) bounded_kernel(int* out) { out[threadIdx.x] = 1; }  // @launch-bound

__global__ void wmma_misaligned_kernel(const __half* in, float* out) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, in + 8, 16);  // @wmma-misaligned
  out[threadIdx.x] = float(a.x[0]);
}

__global__ void read_kernel(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x]; }  // @wrong-device

// Launches are queued (emu/runtime/queue.h): synchronise to run them, then the launch's error.
int finish() {
  const cudaError_t run = cudaDeviceSynchronize(), launch = cudaGetLastError();
  return int(run != cudaSuccess ? run : launch);
}

}  // namespace

namespace moe::emu_test {

int neighbour(int* out, bool barrier) {
  neighbour_kernel<<<2, 64>>>(out, barrier);
  return finish();
}
int oob_global(float* out, int n) {
  oob_global_kernel<<<1, 32>>>(out, n);
  return finish();
}
int oob_shared(int* out) {
  oob_shared_kernel<<<1, 64>>>(out);
  return finish();
}
int divergent_exit(int* out) {
  divergent_exit_kernel<<<1, 32>>>(out);
  return finish();
}
int divergent_sites(int* out) {
  divergent_sites_kernel<<<1, 32>>>(out);
  return finish();
}
int uninitialized(int* out) {
  uninitialized_kernel<<<1, 64>>>(out);
  return finish();
}
int same_value(int* out) {
  same_value_kernel<<<1, 64>>>(out);
  return finish();
}
int warp_order(int* out, bool syncwarp, bool shuffle) {
  warp_order_kernel<<<1, 32>>>(out, syncwarp, shuffle);
  return finish();
}
int async_copy(const float* in, float* out, bool wait) {
  async_copy_kernel<<<1, 64>>>(in, out, wait);
  return finish();
}
int shuffle_deadlock(int* out) {
  shuffle_deadlock_kernel<<<1, 32>>>(out);
  return finish();
}
int misaligned(const float* in, float* out) {
  misaligned_kernel<<<1, 32>>>(in, out);
  return finish();
}
int bounded(int* out, int threads) {
  bounded_kernel<<<1, threads>>>(out);
  return finish();
}
int wmma_misaligned(const void* in, float* out) {
  wmma_misaligned_kernel<<<1, 32>>>(static_cast<const __half*>(in), out);
  return finish();
}
int read(const float* in, float* out, int device) {
  cudaSetDevice(device);
  read_kernel<<<1, 32>>>(in, out);
  const int e = finish();
  cudaSetDevice(0);
  return e;
}

}  // namespace moe::emu_test
