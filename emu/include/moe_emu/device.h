// CUDA emulator (emu/README.md): the device built-ins that .cu sources use, as plain C++ over the
// emulator's runtime: thread and block indices, __syncthreads / __syncwarp, warp shuffles, ballot and
// match (any width and mask), atomics, __trap, the integer and float intrinsics, CUDA's global
// min / max overloads. Force-included into every emulated .cu file (as nvcc force-includes its own).
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "moe_emu/qualifiers.h"
#include "moe_emu/runtime.h"

#define threadIdx (::moe_emu::tls_position->thread)
#define blockIdx (::moe_emu::tls_position->block)
#define blockDim (::moe_emu::tls_position->block_dim)
#define gridDim (::moe_emu::tls_position->grid_dim)
constexpr int warpSize = 32;

MOE_EMU_INLINE void __syncthreads() { moe_emu::syncthreads(); }
MOE_EMU_INLINE void __syncwarp(unsigned mask = 0xffffffffu) { moe_emu::syncwarp(mask); }
MOE_EMU_INLINE void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
MOE_EMU_INLINE void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] MOE_EMU_INLINE void __trap() { moe_emu::trap(); }

namespace moe_emu {
template <class T>
MOE_EMU_INLINE uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move values of at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
MOE_EMU_INLINE T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace moe_emu

template <class T>
MOE_EMU_INLINE T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize) {
  return moe_emu::from_bits<T>(moe_emu::shuffle(moe_emu::Shuffle::index, mask, moe_emu::to_bits(v), src_lane, width));
}
template <class T>
MOE_EMU_INLINE T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return moe_emu::from_bits<T>(moe_emu::shuffle(moe_emu::Shuffle::up, mask, moe_emu::to_bits(v), int(delta), width));
}
template <class T>
MOE_EMU_INLINE T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return moe_emu::from_bits<T>(moe_emu::shuffle(moe_emu::Shuffle::down, mask, moe_emu::to_bits(v), int(delta), width));
}
template <class T>
MOE_EMU_INLINE T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  return moe_emu::from_bits<T>(moe_emu::shuffle(moe_emu::Shuffle::xor_, mask, moe_emu::to_bits(v), lane_mask, width));
}
MOE_EMU_INLINE unsigned __ballot_sync(unsigned mask, int predicate) { return moe_emu::ballot(mask, predicate != 0); }
MOE_EMU_INLINE int __any_sync(unsigned mask, int predicate) { return moe_emu::ballot(mask, predicate != 0) != 0; }
MOE_EMU_INLINE int __all_sync(unsigned mask, int predicate) { return moe_emu::ballot(mask, predicate != 0) == mask; }
template <class T>
MOE_EMU_INLINE unsigned __match_any_sync(unsigned mask, T value) {
  return moe_emu::match_any(mask, moe_emu::to_bits(value));
}

// Atomics: CUDA's overloads.
MOE_EMU_INLINE float atomicAdd(float* p, float v) { return moe_emu::atomic_add(p, v); }
MOE_EMU_INLINE double atomicAdd(double* p, double v) { return moe_emu::atomic_add(p, v); }
MOE_EMU_INLINE int atomicAdd(int* p, int v) { return moe_emu::atomic_add(p, v); }
MOE_EMU_INLINE unsigned atomicAdd(unsigned* p, unsigned v) { return moe_emu::atomic_add(p, v); }
MOE_EMU_INLINE unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return moe_emu::atomic_add(p, v); }
MOE_EMU_INLINE int atomicCAS(int* p, int e, int d) { return moe_emu::atomic_cas(p, e, d); }
MOE_EMU_INLINE unsigned atomicCAS(unsigned* p, unsigned e, unsigned d) { return moe_emu::atomic_cas(p, e, d); }
MOE_EMU_INLINE unsigned long long atomicCAS(unsigned long long* p, unsigned long long e, unsigned long long d) {
  return moe_emu::atomic_cas(p, e, d);
}
MOE_EMU_INLINE int atomicMax(int* p, int v) { return moe_emu::atomic_max(p, v); }
MOE_EMU_INLINE unsigned atomicMax(unsigned* p, unsigned v) { return moe_emu::atomic_max(p, v); }
MOE_EMU_INLINE int atomicMin(int* p, int v) { return moe_emu::atomic_min(p, v); }
MOE_EMU_INLINE int atomicExch(int* p, int v) { return moe_emu::atomic_exch(p, v); }
MOE_EMU_INLINE unsigned atomicExch(unsigned* p, unsigned v) { return moe_emu::atomic_exch(p, v); }
MOE_EMU_INLINE float atomicExch(float* p, float v) { return moe_emu::atomic_exch(p, v); }

// Bit and conversion intrinsics.
MOE_EMU_INLINE int __popc(unsigned x) { return __builtin_popcount(x); }
MOE_EMU_INLINE int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
MOE_EMU_INLINE int __ffs(int x) { return __builtin_ffs(x); }
MOE_EMU_INLINE int __ffsll(long long x) { return __builtin_ffsll(x); }
MOE_EMU_INLINE int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
MOE_EMU_INLINE int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
MOE_EMU_INLINE float __int_as_float(int x) { return moe_emu::from_bits<float>(static_cast<uint32_t>(x)); }
MOE_EMU_INLINE int __float_as_int(float x) { return static_cast<int>(static_cast<uint32_t>(moe_emu::to_bits(x))); }
MOE_EMU_INLINE unsigned __float_as_uint(float x) { return static_cast<uint32_t>(moe_emu::to_bits(x)); }
MOE_EMU_INLINE float __uint_as_float(unsigned x) { return moe_emu::from_bits<float>(x); }
// float -> int as PTX's cvt does: saturating, NaN -> 0 (a C++ cast of an out-of-range float is undefined).
MOE_EMU_INLINE int saturate_to_int(float x) {
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.f) return 2147483647;
  if (x < -2147483648.f) return -2147483647 - 1;
  return static_cast<int>(x);
}
MOE_EMU_INLINE int __float2int_rz(float x) { return saturate_to_int(std::trunc(x)); }
MOE_EMU_INLINE int __float2int_rn(float x) { return saturate_to_int(std::nearbyint(x)); }
MOE_EMU_INLINE float __int2float_rn(int x) { return static_cast<float>(x); }
MOE_EMU_INLINE float __expf(float x) { return std::exp(x); }
MOE_EMU_INLINE float __logf(float x) { return std::log(x); }
MOE_EMU_INLINE float __fdividef(float a, float b) { return a / b; }
MOE_EMU_INLINE float __fmul_rn(float a, float b) { return a * b; }  // the host never contracts it into an FMA
MOE_EMU_INLINE float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
MOE_EMU_INLINE float rsqrtf(float x) { return 1.f / std::sqrt(x); }
MOE_EMU_INLINE double rsqrt(double x) { return 1.0 / std::sqrt(x); }
template <class T>
MOE_EMU_INLINE T __ldg(const T* p) {
  return *p;
}
template <class T>
MOE_EMU_INLINE T __ldcg(const T* p) {  // a load past L1: the host has one coherent cache
  return *p;
}
using std::isfinite;
using std::isinf;
using std::isnan;

// CUDA's global min / max accept mixed integer and floating arguments.
template <class A, class B>
MOE_EMU_INLINE std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B>
MOE_EMU_INLINE std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
