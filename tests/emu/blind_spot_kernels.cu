// Kernels for tests/emu/blind_spot_test.cpp and stream_test.cpp: bugs a GPU shows only as wrong or
// changing numbers (a race between blocks through global memory, a read of memory nothing wrote, a
// result that depends on the order of blocks or threads, a kernel never compiled), each beside its
// correct twin. Lines the tests look up carry "@name" markers. Plain CUDA: nvcc compiles it too.
#include <cuda_runtime.h>

#include "blind_spot_kernels.h"

namespace {

__global__ void block_race_kernel(int* out, bool own_element) {
  if (threadIdx.x != 0) return;
  const int next = own_element ? int(blockIdx.x) : int(blockIdx.x + 1) % int(gridDim.x);
  const int v = out[next];  // @global-race-read
  out[blockIdx.x] = v + 1;  // @global-race-write
}

__global__ void block_atomics_kernel(int* out) {
  if (threadIdx.x == 0) atomicAdd(out, 1);
}

__global__ void read_into_kernel(const int* in, int* out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] + 1;  // @global-read
}

__global__ void write_iota_kernel(int* out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = i;  // @global-write
}

__global__ void last_block_kernel(int* out, bool max) {
  if (threadIdx.x != 0) return;
  if (max) atomicMax(out, int(blockIdx.x));
  else atomicExch(out, int(blockIdx.x));  // the last block to run wins: depends on the block order
}

__global__ void last_thread_kernel(int* out, bool max) {
  __shared__ int last;
  if (threadIdx.x == 0) last = -1;
  __syncthreads();
  if (max) atomicMax(&last, int(threadIdx.x));
  else atomicExch(&last, int(threadIdx.x));  // the last thread to run wins: depends on the thread order
  __syncthreads();
  if (threadIdx.x == 0) *out = last;
}

// The source count (moe_emu::unlaunched_kernels): a template no code instantiates is compiled into no
// program, so only counting the sources finds it; its twin is instantiated and launched.
template <class T>
__global__ void never_instantiated_kernel(T* out) {  // @never-instantiated
  *out = T(1);
}

template <class T>
__global__ void launched_twin_kernel(T* out) {
  if (out) *out = T(1);
}

}  // namespace

namespace moe::emu_test {

void block_race(int* out, bool own_element, cudaStream_t stream) { block_race_kernel<<<8, 32, 0, stream>>>(out, own_element); }
void block_atomics(int* out) { block_atomics_kernel<<<8, 32>>>(out); }
void read_into(const int* in, int* out, int n, cudaStream_t stream) {
  read_into_kernel<<<(n + 63) / 64, 64, 0, stream>>>(in, out, n);
}
void write_iota(int* out, int n, cudaStream_t stream) { write_iota_kernel<<<(n + 63) / 64, 64, 0, stream>>>(out, n); }
void last_block(int* out, bool max) { last_block_kernel<<<64, 32>>>(out, max); }
void last_thread(int* out, bool max) { last_thread_kernel<<<1, 256>>>(out, max); }
void launch_twin() { launched_twin_kernel<float><<<1, 1>>>(nullptr); }

}  // namespace moe::emu_test
