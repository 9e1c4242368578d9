// The tensor-core and asynchronous instructions of sm_80 and sm_90a that moe's kernels use, one device
// function each: inline PTX under nvcc, the CUDA emulator's implementation under MOE_CUDA_EMU (which
// executes them with the PTX ISA's register and shared-memory layouts and reports their misuse:
// docs/CUDA-EMULATOR.md). Kernels use these, never raw asm. Register fragments are u32 registers of
// two 16-bit elements (the lower one first), as PTX has them:
//   mma_m16n8k16: d = a b + c on a 16x16 (row) by 16x8 (col) tile, f32 accumulators (sm_80)
//   ldmatrix<N, Trans>: N (1, 2, 4) 8x8 b16 matrices from shared memory, lane l giving row l % 8 of
//     matrix l / 8 (sm_75)
//   cp_async<Bytes, Global>: an asynchronous 4/8/16-byte copy global -> shared, the bytes past
//     `src_bytes` zero-filled; cp_async_commit / cp_async_wait<N> (sm_80)
//   wgmma (ptx_wgmma.cuh), mbarriers, TMA (tensor_map.cuh's maps), named barriers, elect_one,
//     setmaxnreg, fence_proxy_async (sm_90a; elsewhere a trap: the variant table never sends a kernel
//     to an architecture it was not built for)
// Covered by tests/gpu/ptx_instructions_parity_test.cpp (layouts against tables from the PTX ISA, on the
// emulator and on a GPU) and tests/emu/async_checker_test.cpp (misuse).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

// MOE_PTX_DEVICE: nvcc's device pass (inline PTX); MOE_PTX_SM90A: ... for sm_90a, where wgmma and TMA exist.
#if defined(__CUDA_ARCH__) && !defined(MOE_CUDA_EMU)
#define MOE_PTX_DEVICE 1
#else
#define MOE_PTX_DEVICE 0
#endif
#if MOE_PTX_DEVICE && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOE_PTX_SM90A 1
#else
#define MOE_PTX_SM90A 0
#endif

namespace moe::cuda::ptx {

template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

#ifdef MOE_CUDA_EMU
template <class T>
constexpr moe_emu::MmaType mma_type = std::is_same_v<T, __nv_bfloat16> ? moe_emu::MmaType::bf16 : moe_emu::MmaType::f16;
#endif

/// The shared-window address of a pointer into shared memory (descriptors, barriers, TMA).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
#ifdef MOE_CUDA_EMU
  return moe_emu::shared_address(p);
#elif MOE_PTX_DEVICE
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  return 0;
#endif
}

/// Two floats as one register of two 16-bit elements (lo first).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  static_assert(is_16bit_float<T>, "pack2 packs bf16 or f16");
  const T a = T(lo), b = T(hi);
  uint16_t ua, ub;
  std::memcpy(&ua, &a, 2);
  std::memcpy(&ub, &b, 2);
  return uint32_t(ua) | uint32_t(ub) << 16;
}

// ---------------------------------------------------------------------------------------------- sm_80
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                             const float (&c)[4]) {
  static_assert(is_16bit_float<T>, "mma.m16n8k16 takes bf16 or f16");
#ifdef MOE_CUDA_EMU
  moe_emu::mma_m16n8k16(mma_type<T>, d, a, b, c);
#elif MOE_PTX_DEVICE
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                   "f"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                   "f"(c[3]));
#endif
}

template <int N, bool Trans>
__device__ __forceinline__ void ldmatrix(uint32_t (&r)[N], const void* row) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
#ifdef MOE_CUDA_EMU
  moe_emu::ldmatrix(N, Trans, r, row);
#elif MOE_PTX_DEVICE
  const uint32_t a = smem_addr(row);
  if constexpr (N == 1 && !Trans) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  if constexpr (N == 1 && Trans) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  if constexpr (N == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  if constexpr (N == 2 && Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  if constexpr (N == 4 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  if constexpr (N == 4 && Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#endif
}

/// cp.async.ca (Global = false: through L1) or .cg (16 bytes only, L2) of Bytes bytes, the bytes past
/// src_bytes zero-filled (src_bytes 0 reads nothing).
template <int Bytes, bool Global = false>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem, int src_bytes = Bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(!Global || Bytes == 16, "cp.async.cg copies 16 bytes");
#ifdef MOE_CUDA_EMU
  moe_emu::cp_async(smem, gmem, Bytes, unsigned(src_bytes), Global);
#elif MOE_PTX_DEVICE
  if constexpr (Global)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(smem)), "l"(gmem), "n"(Bytes),
                 "r"(src_bytes)
                 : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef MOE_CUDA_EMU
  moe_emu::pipeline_commit();
#elif MOE_PTX_DEVICE
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N of the thread's committed cp.async groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef MOE_CUDA_EMU
  moe_emu::pipeline_wait_prior(N);
#elif MOE_PTX_DEVICE
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace moe::cuda::ptx

#include "common/ptx_hopper.cuh"
