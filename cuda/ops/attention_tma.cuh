// Tensor maps of the Hopper attention kernels (attention_fwd_wgmma.cu, attention_bwd_wgmma.cu): one head's
// rows of a [B, T, heads, D] tensor as a 4-d map (d, head, t, b) whose boxes are `box_d` elements of d by one
// head by `rows` rows by one batch row. 16-bit operands move in 64-element boxes of 128 bytes with the 128-byte
// swizzle wgmma's descriptors expect; the backward's f32 dQ accumulator in whole, unswizzled rows.
// Covered by tests/gpu/attention_parity_test.cpp (every Hopper case runs through these maps on the emulator).
#pragma once
#include <cuda_fp16.h>

#include <type_traits>

#include "attention_common.cuh"
#include "common/tensor_map.cuh"

namespace moe::cuda::attn {

inline CUtensorMap head_map(const void* base, const Params& p, int T_, int heads, uint32_t box_d, uint32_t rows,
                            CUtensorMapDataType type, uint64_t element_bytes, CUtensorMapSwizzle swizzle) {
  const uint64_t D = uint64_t(p.D), row = uint64_t(heads) * D * element_bytes;
  const uint64_t dims[4] = {D, uint64_t(heads), uint64_t(T_), uint64_t(p.B)};
  const uint64_t strides[3] = {D * element_bytes, row, row * uint64_t(T_)};
  const uint32_t box[4] = {box_d, 1, rows, 1};
  return make_tensor_map(type, base, 4, dims, strides, box, swizzle);
}

/// A 16-bit operand's map: 64-element (128-byte) boxes of `rows` rows, 128-byte swizzle.
template <class T>
CUtensorMap operand_map(const void* base, const Params& p, int T_, int heads, uint32_t rows) {
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return head_map(base, p, T_, heads, 64, rows, type, 2, CU_TENSOR_MAP_SWIZZLE_128B);
}

}  // namespace moe::cuda::attn
