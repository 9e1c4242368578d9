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
