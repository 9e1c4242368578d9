// CUDA emulator (emu/README.md): what tests and tools ask the emulator directly. Available in builds
// with MOE_CUDA_EMU only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moe_emu {

/// One finding of the checker: kind is one of race, out-of-bounds, misaligned, uninitialized-read,
/// async-copy-in-flight, divergent-barrier, deadlock, warp-misuse, wmma-misuse, launch-bound,
/// shared-memory-limit, trap, wrong-device, api-misuse, stream-race, pending-host-access, async-misuse. text names the
/// kernel, block, thread and line (or the API call).
struct Report {
  std::string kind, kernel, text;
};
/// The reports since the last call (every report is also printed to stderr as it is made).
std::vector<Report> take_reports();

/// Every __global__ instantiation compiled into the program, and whether it was launched.
struct KernelCoverage {
  std::string name;
  bool launched;
  unsigned max_threads;       // the largest block it was launched with
  size_t max_dynamic_shared;  // ... and the most dynamic shared memory
};
std::vector<KernelCoverage> kernel_coverage();

/// Every __global__ function defined in the .cu/.cuh files under `source_dir` (counted from the
/// sources, so templates never instantiated count too) that no launch reached: "NAME (FILE:LINE)",
/// with why (never launched, or never compiled into this program).
std::vector<std::string> unlaunched_kernels(const std::string& source_dir);

/// The seed of the block and thread order (MOE_EMU_SCHEDULE_SEED; 0: in order); returns the previous.
uint64_t set_schedule_seed(uint64_t seed);

/// What the host has waited for and copied back since the program started: copies from device to host
/// memory (cudaMemcpy and cudaMemcpyAsync), and calls that block the host until queued work has run
/// (stream, event and device synchronisation, a synchronous copy). An MoE layer must do neither, so that
/// a whole update can be captured in a CUDA graph (tests/emu/moe_no_sync_test.cpp,
/// tests/emu/attention_mixtures_no_sync_test.cpp).
struct HostTraffic {
  uint64_t copies_to_host = 0, host_waits = 0;
};
HostTraffic host_traffic();

/// The host GEMM behind the emulated cuBLAS and cuBLASLt: row-major c = alpha op(a) op(b) + beta c with
/// BLAS's leading dimensions, as moe::cpu::sgemm (lib/ops/cpu_gemm.h), which registers itself here so that
/// the emulator's GEMMs run on moe's CPU GEMM dispatch (oneDNN's AVX-512 kernels where the CPU has them);
/// OpenBLAS's cblas_sgemm until one is set.
using HostSgemm = void (*)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void set_host_sgemm(HostSgemm gemm);

}  // namespace moe_emu

namespace moe_emu {
/// A caching allocator tells the checker which bytes of a cudaMalloc block hold a live tensor
/// (live = true) and which were given back (live = false), so that an access beyond a tensor's end
/// is out of bounds even inside the cached block. New live ranges are filled with 0xff bytes (NaN
/// for every float type), as reused GPU memory holds garbage.
void note_suballocation(void* ptr, size_t bytes, bool live);
}  // namespace moe_emu
