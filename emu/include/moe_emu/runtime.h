// CUDA emulator (emu/README.md): the interface between code compiled from .cu sources (device
// built-ins in device.h, launches in launch.h, wmma, cp.async, atomics) and the emulator's runtime
// (emu/runtime/). Every function here is out of line: a call is a point where the calling emulated
// thread may be suspended (barriers, warp collectives) and where its earlier stores have landed.
#pragma once
#include <cstddef>
#include <cstdint>

#include "vector_types.h"

namespace moe_emu {

/// Where the running emulated thread is; the scheduler points tls_position at the running thread's copy.
struct Position {
  uint3 thread, block;
  dim3 block_dim, grid_dim;
};
extern thread_local constinit const Position* tls_position;

// Barriers and warp collectives. `mask` names the participating lanes as in CUDA's *_sync intrinsics.
void syncthreads();
void syncwarp(unsigned mask);
enum class Shuffle { index, up, down, xor_ };
uint64_t shuffle(Shuffle kind, unsigned mask, uint64_t bits, int arg, int width);
unsigned ballot(unsigned mask, bool predicate);
unsigned match_any(unsigned mask, uint64_t value);
[[noreturn]] void trap();

// Warp matrix operations (nvcuda::wmma): the whole warp must take part (`converge` checks that, and
// the pointer's alignment and leading dimension); mma computes d = a b + c for the 16x16x16 tile of the warp,
// lane l holding elements 8l .. 8l+7 of each row-major 16x16 fragment.
enum class WmmaOp { load_a, load_b, load_c, store, mma };
void wmma_converge(WmmaOp op, const void* ptr, unsigned ldm, unsigned element_bytes);
void wmma_mma(float (&d)[8], const float (&a)[8], const float (&b)[8], const float (&c)[8]);

// The tensor-core and asynchronous instructions of sm_80 and sm_90a (cuda/common/ptx.cuh calls these
// under the emulator; docs/CUDA-EMULATOR.md lists what each checks). Register fragments follow the PTX
// ISA's layouts; 16-bit operands travel as u32 registers holding two elements (the lower one first).
enum class MmaType : int { bf16, f16 };
/// mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 d, a, b, c (a warp collective).
void mma_m16n8k16(MmaType type, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]);
/// ldmatrix.sync.aligned.m8n8.x{matrices}{.trans}.shared.b16: lane l gives the row address `row`.
void ldmatrix(int matrices, bool trans, uint32_t* dst, const void* row);
/// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes (the rest zero-filled).
void cp_async(void* dst_shared, const void* src_global, unsigned bytes, unsigned src_bytes, bool cache_global);
/// __cvta_generic_to_shared: a pointer into the block's shared memory as a shared-window address.
uint32_t shared_address(const void* p);
/// wgmma.fence / commit_group / wait_group N (warpgroup operations of every thread).
void wgmma_fence();
void wgmma_commit_group();
void wgmma_wait_group(unsigned pending);
/// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.T.T: A from shared memory (desc_a) or, when a_regs is not
/// null, from the thread's four registers; B from shared memory (desc_b); trans: MN-major (else K-major).
void wgmma_mma_async(MmaType type, int n, float* d, const uint32_t* a_regs, uint64_t desc_a, uint64_t desc_b,
                     bool trans_a, bool trans_b, bool accumulate);
/// mbarrier.init / arrive (expect_tx: the transaction bytes the phase then expects) / expect_tx / try_wait.parity.
void mbarrier_init(uint64_t* bar, unsigned count);
uint64_t mbarrier_arrive(uint64_t* bar, unsigned expect_tx);
void mbarrier_expect_tx(uint64_t* bar, unsigned bytes);
bool mbarrier_try_wait_parity(uint64_t* bar, unsigned parity);
/// fence.proxy.async.shared::cta: the thread's earlier shared-memory writes become visible to wgmma and TMA.
void fence_proxy_async();
/// bar.sync id, threads (wait) / bar.arrive id, threads.
void named_barrier(unsigned id, unsigned threads, bool wait);
/// elect.sync _|p, mask: true in one lane of the mask.
bool elect_sync(unsigned mask);
/// setmaxnreg.{inc,dec}.sync.aligned.u32 regs (a warpgroup collective).
void setmaxnreg(unsigned regs, bool increase);
/// cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, coords], [bar].
void tma_load(void* dst_shared, const void* tensor_map, const int32_t* coords, int rank, uint64_t* bar);
/// cp{.reduce}.async.bulk.tensor.{rank}d.global.shared::cta{.add}.tile.bulk_group [map, coords], [src].
void tma_store(const void* tensor_map, const int32_t* coords, int rank, const void* src_shared, bool reduce_add);
/// cp.async.bulk.commit_group / wait_group{.read} N.
void bulk_commit_group();
void bulk_wait_group(unsigned pending, bool read_only);

// Shared memory of the running block: one per declaration site (SharedKey), and the dynamic part.
struct SharedKey {
  char unused;
};
void* shared_variable_raw(SharedKey* key, size_t bytes, size_t align, const char* name);
void* dynamic_shared_raw(size_t align);

// cp.async (CUDA's pipeline primitives): copies land at the wait, not before.
void pipeline_memcpy_async(void* dst, const void* src, size_t bytes, size_t zero_fill);
void pipeline_commit();
void pipeline_wait_prior(unsigned groups);

// Atomics on global or shared memory, checked like any access.
float atomic_add(float* p, float v);
double atomic_add(double* p, double v);
int atomic_add(int* p, int v);
unsigned atomic_add(unsigned* p, unsigned v);
unsigned long long atomic_add(unsigned long long* p, unsigned long long v);
uint16_t atomic_add_half(uint16_t* p, float v);      // __half bits
uint16_t atomic_add_bfloat16(uint16_t* p, float v);  // __nv_bfloat16 bits
int atomic_cas(int* p, int expected, int desired);
unsigned atomic_cas(unsigned* p, unsigned expected, unsigned desired);
unsigned long long atomic_cas(unsigned long long* p, unsigned long long expected, unsigned long long desired);
int atomic_max(int* p, int v);
int atomic_min(int* p, int v);
unsigned atomic_max(unsigned* p, unsigned v);
int atomic_exch(int* p, int v);
unsigned atomic_exch(unsigned* p, unsigned v);
float atomic_exch(float* p, float v);

// Kernels: every __global__ function registers at start-up (coverage) and enters through kernel_entry.
struct KernelRecord;
KernelRecord* register_kernel(const char* tag_type_name, const char* file);
/// `kernel` is the address of the kernel's KernelSite record (taking it reads no memory of the program).
void kernel_entry(KernelRecord* const* kernel, unsigned launch_bound);

}  // namespace moe_emu
