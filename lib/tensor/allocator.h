// A caching allocator per device: freed blocks go back to size-keyed free lists and are handed out
// again, so steady-state training performs no cudaMalloc/cudaFree (or malloc/free) at all.
// Sizes are rounded up (512 B granularity below 1 MiB, 2 MiB above); a request takes the smallest cached
// block that fits and is at most twice its size. On the CPU, blocks above 64 KiB come from a HostArena
// instead (host_arena.h: page multiples, best fit, freed ranges merged and reused for any size), so the
// pages a run touches once serve it to the end; tensors that grow a little at every step (the decoder's
// key/value cache, a batch longer than the last) reuse freed memory instead of faulting in fresh pages
// (system time, issue 13). Sanitizer builds keep one system allocation per block, so that AddressSanitizer
// sees every tensor's bounds: there, blocks above 64 KiB are rounded to four classes per power of two,
// 2^k * {1, 1.25, 1.5, 1.75}, for the same reuse; so are they after the arena could not reserve address space
// (a limit too tight for it: one warning in the log says so). On failure the cache is released and the
// request retried once; after that OutOfMemory names the request, what is in use, the peak and, on the CPU,
// the memory limits found (host_limits.h), on a GPU its free memory.
// Covered by tests/unit/tensor_test.cpp, tests/unit/host_arena_test.cpp and tests/scripts/memory_limits.sh.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/host_arena.h"

namespace moe {

struct AllocatorStats {
  size_t in_use = 0;        // bytes handed out and not yet returned (rounded sizes)
  size_t peak_in_use = 0;   // maximum of in_use since the last reset_peak()
  size_t reserved = 0;      // bytes obtained from the system (in use + cached; the arena's high-water mark)
  size_t raw_allocations = 0;  // calls to the system allocator so far (and rises of the arena's mark)
};

class Allocator {
 public:
  explicit Allocator(Device device) : device_(device) {}
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  /// Returns memory for `bytes` (256-byte aligned); `bytes == 0` gives a valid unique pointer.
  void* allocate(size_t bytes);
  void deallocate(void* ptr);
  /// Gives every cached (free) block back to the system.
  void release_cache();
  AllocatorStats stats() const;
  void reset_peak();
  /// While set, blocks freed are kept out of the cache (still counted in use): the work a CUDA graph
  /// records must find its memory unchanged at every replay (tensor/cuda_graph.h). take_held hands the
  /// blocks held so far to the caller, who frees them with return_blocks once the graph is gone.
  void hold_frees(bool on);
  std::vector<void*> take_held();
  void return_blocks(const std::vector<void*>& blocks);
  /// Optional cap on reserved bytes (tests use it to provoke OutOfMemory); 0 = no cap.
  void set_limit(size_t bytes) { limit_ = bytes; }
  Device device() const { return device_; }

  static size_t round_size(size_t bytes);
  /// The block a request of `bytes` takes on `device` (what in_use counts; the dry run's estimate).
  static size_t rounded(Device device, size_t bytes);
  /// The CPU allocator's rounding (size classes above 64 KiB, page multiples) where blocks are
  /// separate system allocations (sanitizer builds).
  static size_t round_size_host(size_t bytes);
  /// True where CPU blocks above 64 KiB come from the HostArena (every build but the sanitizers'; an allocator
  /// falls back to malloc when the arena cannot reserve).
  static bool host_arena_enabled();

 private:
  bool in_arena(size_t size) const;      // a CPU block the HostArena serves
  size_t block_size(size_t bytes) const;  // the rounded size of a request
  void* raw_alloc(size_t bytes);
  void raw_free(void* ptr);
  size_t reserved_locked() const;
  void release_cache_locked();

  Device device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;  // size -> block
  std::map<void*, size_t> block_sizes_;       // every live or cached block -> its rounded size
  std::unique_ptr<HostArena> arena_;          // CPU blocks above 64 KiB (host_arena_enabled())
  AllocatorStats stats_;
  size_t limit_ = 0;
  bool arena_fallback_ = false;  // the arena could not reserve: large CPU blocks from malloc
  bool holding_ = false;         // hold_frees
  std::vector<void*> held_;
};

/// The process-wide allocator of a device (created on first use).
Allocator& allocator_for(Device device);

/// "1.50 GiB"-style rendering of a byte count for messages and logs.
std::string format_bytes(size_t bytes);

}  // namespace moe
