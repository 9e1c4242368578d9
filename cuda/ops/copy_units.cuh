// Helpers for the data-movement kernels of embedding, gather_scatter and shape_ops: the widest
// memory unit (16, 8, 4, 2 or 1 bytes) that every extent and pointer of a copy is a multiple of,
// so plain copies move 16-byte vectors whenever the layout allows, and an element store that
// either overwrites or accumulates in f32. Exercised by tests/gpu/shape_ops_parity_test.cpp.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "common/cuda_types.cuh"

namespace moe::cuda {

/// The widest unit in {16, 8, 4, 2, 1} bytes dividing every byte count and pointer address.
inline int pick_unit(std::initializer_list<long long> byte_counts, std::initializer_list<const void*> ptrs) {
  for (int u : {16, 8, 4, 2}) {
    bool ok = true;
    for (long long b : byte_counts) ok = ok && b % u == 0;
    for (const void* p : ptrs) ok = ok && reinterpret_cast<uintptr_t>(p) % u == 0;
    if (ok) return u;
  }
  return 1;
}

/// Calls fn(U{}) with U the unsigned type (or vector) of `unit` bytes.
template <class Fn>
void with_unit(int unit, Fn&& fn) {
  switch (unit) {
    case 16:
      fn(uint4{});
      break;
    case 8:
      fn(uint2{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    default:
      fn(uint8_t{});
      break;
  }
}

/// *d = v, or *d += v in f32 when Acc (Acc only with float storage types).
template <bool Acc, class U>
__device__ __forceinline__ void put(U* d, U v) {
  if constexpr (Acc)
    *d = from_float<U>(to_float(*d) + to_float(v));
  else
    *d = v;
}

}  // namespace moe::cuda
