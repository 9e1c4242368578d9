// CUDA emulator (emu/README.md): what tests and tools ask the emulator directly. Available in builds
// with MOE_CUDA_EMU only.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace moe_emu {

/// One finding of the checker: kind is one of race, out-of-bounds, misaligned, uninitialized-read,
/// async-copy-in-flight, divergent-barrier, deadlock, warp-misuse, wmma-misuse, launch-bound,
/// shared-memory-limit, trap, wrong-device, api-misuse. text names the kernel, block, thread and line.
struct Report {
  std::string kind, kernel, text;
};
/// The reports since the last call (every report is also printed to stderr as it is made).
std::vector<Report> take_reports();

/// Every __global__ instantiation compiled into the program, and whether it was launched.
struct KernelCoverage {
  std::string name;
  bool launched;
  unsigned max_threads;  // the largest block it was launched with
};
std::vector<KernelCoverage> kernel_coverage();

}  // namespace moe_emu

namespace moe_emu {
/// A caching allocator tells the checker which bytes of a cudaMalloc block hold a live tensor
/// (live = true) and which were given back (live = false), so that an access beyond a tensor's end
/// is out of bounds even inside the cached block. New live ranges are filled with 0xff bytes (NaN
/// for every float type), as reused GPU memory holds garbage.
void note_suballocation(void* ptr, size_t bytes, bool live);
}  // namespace moe_emu
