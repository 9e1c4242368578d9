// Per-device CUDA context: the one stream every kernel of a device runs on, and the cuBLAS /
// cuBLASLt handles, created once on first use. Host code reaches them through stream(device).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tensor/device.h"

namespace moe::cuda {

cudaStream_t stream(int device);
cublasHandle_t cublas(int device);
cublasLtHandle_t cublas_lt(int device);
/// A workspace for cuBLASLt on the device (32 MiB, allocated once).
void* cublas_workspace(int device, size_t* bytes);
inline cudaStream_t stream(Device d) { return stream(d.index); }

/// Grid size for `n` elements with `threads` per block, capped to keep grid-stride loops busy.
inline unsigned grid_for(long long n, int threads = 256) {
  long long blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;
  return static_cast<unsigned>(blocks);
}

}  // namespace moe::cuda
