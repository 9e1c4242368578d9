// ptx.cuh's sm_90a half: wgmma, mbarriers, the Tensor Memory Accelerator, named barriers, elect.sync,
// setmaxnreg and the async-proxy fence. Inline PTX for nvcc's sm_90a pass (elsewhere on a GPU: a trap),
// the CUDA emulator under MOE_CUDA_EMU. wgmma's operands in shared memory are described by
// make_smem_desc (PTX 9.7.15.5.1.2.2: start, leading and stride byte offsets, swizzle mode; the layouts
// in emu/runtime/smem_layout.h); its accumulators d[N / 2] belong to the instruction until a
// wgmma_wait that covers its commit group (fence_registers then keeps nvcc from moving their accesses
// across the wait). Covered by tests/gpu/ptx_instructions_parity_test.cpp and tests/emu/async_checker_test.cpp.
#pragma once
#include <cstdint>

#if MOE_PTX_SM90A
#include "common/ptx_wgmma.cuh"
#endif

namespace moe::cuda::ptx {

/// Traps where the instruction does not exist (a variant built for another architecture).
__device__ __forceinline__ void sm90a_only() {
#if MOE_PTX_DEVICE && !MOE_PTX_SM90A
  __trap();
#endif
}

enum class Major { K, MN };  // the contiguous dimension of a wgmma operand in shared memory
enum class Swizzle : uint64_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

/// A wgmma matrix descriptor: 14-bit start address, leading and stride byte offsets (all >> 4), swizzle mode.
__device__ __forceinline__ uint64_t make_smem_desc(const void* smem, uint32_t leading_bytes, uint32_t stride_bytes,
                                                   Swizzle swizzle) {
  return uint64_t((smem_addr(smem) & 0x3ffff) >> 4) | uint64_t((leading_bytes & 0x3ffff) >> 4) << 16 |
         uint64_t((stride_bytes & 0x3ffff) >> 4) << 32 | uint64_t(swizzle) << 62;
}

__device__ __forceinline__ void wgmma_fence() {
#ifdef MOE_CUDA_EMU
  moe_emu::wgmma_fence();
#elif MOE_PTX_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  sm90a_only();
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#ifdef MOE_CUDA_EMU
  moe_emu::wgmma_commit_group();
#elif MOE_PTX_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Waits until at most N of the thread's wgmma commit groups are in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#ifdef MOE_CUDA_EMU
  moe_emu::wgmma_wait_group(N);
#elif MOE_PTX_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/// Keeps nvcc from moving accesses of registers a wgmma owns across its wait (no code).
template <int R>
__device__ __forceinline__ void fence_registers(float (&r)[R]) {
#if MOE_PTX_DEVICE
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
#endif
}

/// d (+)= A B on a 64 x N x 16 tile of the warpgroup: A (64 x 16) and B (16 x N) in shared memory.
template <int N, class T, Major A, Major B>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256 && is_16bit_float<T>, "wgmma m64nNk16: N in 8..256, bf16 or f16");
#ifdef MOE_CUDA_EMU
  moe_emu::wgmma_mma_async(mma_type<T>, N, d, nullptr, desc_a, desc_b, A == Major::MN, B == Major::MN, accumulate);
#elif MOE_PTX_SM90A
  detail::Wgmma<N>::template ss<std::is_same_v<T, __nv_bfloat16>, A == Major::MN, B == Major::MN>(d, desc_a, desc_b,
                                                                                                 accumulate);
#else
  sm90a_only();
#endif
}

/// The same with A (64 x 16) in registers: a[4] of each thread as mma_m16n8k16's A, rows offset by 16 per warp.
template <int N, class T, Major B>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b, bool accumulate) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256 && is_16bit_float<T>, "wgmma m64nNk16: N in 8..256, bf16 or f16");
#ifdef MOE_CUDA_EMU
  moe_emu::wgmma_mma_async(mma_type<T>, N, d, a, 0, desc_b, false, B == Major::MN, accumulate);
#elif MOE_PTX_SM90A
  detail::Wgmma<N>::template rs<std::is_same_v<T, __nv_bfloat16>, B == Major::MN>(d, a, desc_b, accumulate);
#else
  sm90a_only();
#endif
}

// --------------------------------------------------------------------------------------------- mbarriers
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, unsigned count) {
#ifdef MOE_CUDA_EMU
  moe_emu::mbarrier_init(bar, count);
#elif MOE_PTX_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#else
  sm90a_only();
#endif
}

/// Makes mbarrier inits visible to the async proxy (TMA) before a __syncthreads publishes them.
__device__ __forceinline__ void fence_mbarrier_init() {
#if MOE_PTX_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#ifdef MOE_CUDA_EMU
  moe_emu::mbarrier_arrive(bar, 0);
#elif MOE_PTX_SM90A
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
#endif
}

/// Arrives and adds `bytes` to the transaction bytes the current phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef MOE_CUDA_EMU
  moe_emu::mbarrier_arrive(bar, bytes);
#elif MOE_PTX_SM90A
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef MOE_CUDA_EMU
  moe_emu::mbarrier_expect_tx(bar, bytes);
#elif MOE_PTX_SM90A
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

/// Waits until the phase of parity `parity` (0 or 1) of the barrier has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, unsigned parity) {
#ifdef MOE_CUDA_EMU
  moe_emu::mbarrier_try_wait_parity(bar, parity);
#elif MOE_PTX_SM90A
  asm volatile("{\n.reg .pred done;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n"
               ::"r"(smem_addr(bar)), "r"(parity)
               : "memory");
#endif
}

// ------------------------------------------------------------------------------- Tensor Memory Accelerator
/// Loads the box of `map` at element coordinates c... (dimension 0 first) into shared memory; the copy's
/// bytes complete on `bar` (mbarrier_arrive_expect_tx announces them).
template <class... C>
__device__ __forceinline__ void tma_load(void* smem, const void* map, uint64_t* bar, C... c) {
  static_assert(sizeof...(C) >= 1 && sizeof...(C) <= 5, "TMA copies 1 to 5 dimensions");
  const int32_t coords[] = {int32_t(c)...};
#ifdef MOE_CUDA_EMU
  moe_emu::tma_load(smem, map, coords, int(sizeof...(C)), bar);
#elif MOE_PTX_SM90A
  const uint32_t s = smem_addr(smem), b = smem_addr(bar);
  const auto m = reinterpret_cast<uint64_t>(map);
  if constexpr (sizeof...(C) == 1)
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                 ::"r"(s), "l"(m), "r"(b), "r"(coords[0]) : "memory");
  if constexpr (sizeof...(C) == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(s), "l"(m), "r"(b), "r"(coords[0]), "r"(coords[1]) : "memory");
  if constexpr (sizeof...(C) == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 ::"r"(s), "l"(m), "r"(b), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]) : "memory");
  if constexpr (sizeof...(C) == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(s), "l"(m), "r"(b), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]) : "memory");
  if constexpr (sizeof...(C) == 5)
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                 ::"r"(s), "l"(m), "r"(b), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]), "r"(coords[4])
                 : "memory");
#else
  sm90a_only();
#endif
}

/// Writes (ReduceAdd: adds) the shared-memory box to `map` at coordinates c...; in the thread's open bulk
/// group (bulk_commit, bulk_wait). The shared memory must be fenced (fence_proxy_async) after it was written.
template <bool ReduceAdd, class... C>
__device__ __forceinline__ void tma_store(const void* map, const void* smem, C... c) {
  static_assert(sizeof...(C) >= 1 && sizeof...(C) <= 5, "TMA copies 1 to 5 dimensions");
  const int32_t coords[] = {int32_t(c)...};
#ifdef MOE_CUDA_EMU
  moe_emu::tma_store(map, coords, int(sizeof...(C)), smem, ReduceAdd);
#elif MOE_PTX_SM90A
  const uint32_t s = smem_addr(smem);
  const auto m = reinterpret_cast<uint64_t>(map);
#define MOE_TMA_STORE(DIMS, LIST, ...)                                                                             \
  if constexpr (ReduceAdd)                                                                                         \
    asm volatile("cp.reduce.async.bulk.tensor." DIMS ".global.shared::cta.add.tile.bulk_group [%0, {" LIST "}], [%1];" \
                 ::"l"(m), "r"(s), __VA_ARGS__ : "memory");                                                        \
  else                                                                                                             \
    asm volatile("cp.async.bulk.tensor." DIMS ".global.shared::cta.bulk_group [%0, {" LIST "}], [%1];"             \
                 ::"l"(m), "r"(s), __VA_ARGS__ : "memory")
  if constexpr (sizeof...(C) == 1) { MOE_TMA_STORE("1d", "%2", "r"(coords[0])); }
  if constexpr (sizeof...(C) == 2) { MOE_TMA_STORE("2d", "%2, %3", "r"(coords[0]), "r"(coords[1])); }
  if constexpr (sizeof...(C) == 3) { MOE_TMA_STORE("3d", "%2, %3, %4", "r"(coords[0]), "r"(coords[1]), "r"(coords[2])); }
  if constexpr (sizeof...(C) == 4) {
    MOE_TMA_STORE("4d", "%2, %3, %4, %5", "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]));
  }
  if constexpr (sizeof...(C) == 5) {
    MOE_TMA_STORE("5d", "%2, %3, %4, %5, %6", "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]),
                  "r"(coords[4]));
  }
#undef MOE_TMA_STORE
#else
  sm90a_only();
#endif
}

__device__ __forceinline__ void bulk_commit() {
#ifdef MOE_CUDA_EMU
  moe_emu::bulk_commit_group();
#elif MOE_PTX_SM90A
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N of the thread's bulk groups are in flight (Read: until their sources are read).
template <int N, bool Read = false>
__device__ __forceinline__ void bulk_wait() {
#ifdef MOE_CUDA_EMU
  moe_emu::bulk_wait_group(N, Read);
#elif MOE_PTX_SM90A
  if constexpr (Read) asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
  else asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ------------------------------------------------------------------------------------ warp-specialised sync
/// The thread's earlier shared-memory writes become visible to wgmma and TMA (the async proxy).
__device__ __forceinline__ void fence_proxy_async() {
#ifdef MOE_CUDA_EMU
  moe_emu::fence_proxy_async();
#elif MOE_PTX_SM90A
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Orders the thread's completed async-proxy writes to global memory (a TMA store or reduce-add it waited for
/// with bulk_wait) before its later generic accesses, e.g. a release to other blocks.
__device__ __forceinline__ void fence_proxy_async_global() {
#if !defined(MOE_CUDA_EMU) && MOE_PTX_SM90A
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif  // the emulator's TMA writes global memory when its bulk group completes: nothing to order
}

/// bar.sync id, threads: waits until `threads` threads (a multiple of 32) arrived at barrier `id` (1 to 15).
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
#ifdef MOE_CUDA_EMU
  moe_emu::named_barrier(id, threads, true);
#elif MOE_PTX_DEVICE
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

/// bar.arrive id, threads: counts this thread at the barrier without waiting.
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
#ifdef MOE_CUDA_EMU
  moe_emu::named_barrier(id, threads, false);
#elif MOE_PTX_DEVICE
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

/// elect.sync with every lane: true in exactly one lane of the warp.
__device__ __forceinline__ bool elect_one() {
#ifdef MOE_CUDA_EMU
  return moe_emu::elect_sync(0xffffffffu);
#elif MOE_PTX_SM90A
  uint32_t pred = 0;
  asm volatile("{\n.reg .b32 lane;\n.reg .pred p;\nelect.sync lane|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(pred));
  return pred != 0;
#else
  sm90a_only();
  return false;
#endif
}

/// setmaxnreg.{inc,dec}: the warpgroup's threads hold Regs registers each (24 to 256, a multiple of 8).
template <int Regs, bool Increase>
__device__ __forceinline__ void setmaxnreg() {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg takes 24 to 256 registers, a multiple of 8");
#ifdef MOE_CUDA_EMU
  moe_emu::setmaxnreg(Regs, Increase);
#elif MOE_PTX_SM90A
  if constexpr (Increase) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

}  // namespace moe::cuda::ptx
