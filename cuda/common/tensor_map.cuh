// Tensor maps for the Tensor Memory Accelerator (ptx_hopper.cuh's tma_load / tma_store), made on the
// host: a row-major tensor of `rank` dimensions (dims[0] innermost, strides in bytes of dimensions 1..),
// the box each copy moves and the shared-memory swizzle. On a GPU through the driver's
// cuTensorMapEncodeTiled (reached with cudaGetDriverEntryPointByVersion, so nothing links libcuda); under
// the emulator its own implementation. A refused map is a moe::Error naming the shape.
// Covered by tests/gpu/ptx_instructions_parity_test.cpp.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/error.h"

namespace moe::cuda {

inline CUtensorMap make_tensor_map(CUtensorMapDataType type, const void* base, int rank, const uint64_t* dims,
                                   const uint64_t* strides, const uint32_t* box, CUtensorMapSwizzle swizzle) {
  using Encode = decltype(&cuTensorMapEncodeTiled);
  static const Encode encode = [] {
#ifdef MOE_CUDA_EMU
    return &cuTensorMapEncodeTiled;
#else
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    MOE_CHECK(e == cudaSuccess && found == cudaDriverEntryPointSuccess && fn,
              "make_tensor_map: the driver has no cuTensorMapEncodeTiled (a GPU of compute capability 9.0 and a CUDA 12 "
              "driver are needed)");
    return reinterpret_cast<Encode>(fn);
#endif
  }();
  CUtensorMap map{};
  const uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode(&map, type, cuuint32_t(rank), const_cast<void*>(base), dims, strides, box, element_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  MOE_CHECK(r == CUDA_SUCCESS, "make_tensor_map: cuTensorMapEncodeTiled refused a rank-", rank, " map (dims[0] ",
            dims[0], ", box[0] ", box[0], ", swizzle ", int(swizzle), "): error ", int(r));
  return map;
}

}  // namespace moe::cuda
