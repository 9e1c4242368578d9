// Launchers of the deliberately buggy kernels of tests/emu/bad_kernels.cu; each returns the
// cudaError_t of the launch (as an int: this header is plain C++). Pointers are device memory.
#pragma once

namespace moe::emu_test {

int neighbour(int* out, bool barrier);          // 2 blocks x 64: s[t] written, s[t+1] read
int oob_global(float* out, int n);              // writes out[n .. n+31]
int oob_shared(int* out);                       // 64 threads write a 32-int __shared__ array
int divergent_exit(int* out);                   // half the warp exits before __syncthreads
int divergent_sites(int* out);                  // two halves wait at different __syncthreads
int uninitialized(int* out);                    // reads shared ints nobody wrote
int same_value(int* out);                       // every thread writes the same value: no report
int warp_order(int* out, bool syncwarp, bool shuffle);  // lane 0 writes, lane 1 reads; __syncwarp or a
                                                          // shuffle (which orders nothing) between
int async_copy(const float* in, float* out, bool wait);  // cp.async with or without the wait
int shuffle_deadlock(int* out);                 // half a warp in a full-mask shuffle
int misaligned(const float* in, float* out);    // a float4 load from in + 1
int bounded(int* out, int threads);             // __launch_bounds__(64)
int wmma_misaligned(const void* in, float* out);  // wmma load from a pointer 16 bytes off
int read(const float* in, float* out, int device);  // out[t] = in[t] on `device`

}  // namespace moe::emu_test
