// A caching allocator per device: freed blocks go back to size-keyed free lists and are handed out
// again, so steady-state training performs no cudaMalloc/cudaFree (or malloc/free) at all.
// Sizes are rounded up (512 B granularity below 1 MiB, 2 MiB above; on the CPU, above 64 KiB, to
// four classes per power of two, 2^k * {1, 1.25, 1.5, 1.75}); a request takes the smallest cached
// block that fits and is at most twice its size. The CPU classes let tensors that grow a little at
// every step (the decoder's key/value cache, a batch longer than the last) reuse freed blocks
// instead of taking fresh pages from the OS (page faults, system time) at each step. On failure the cache is released and the
// request retried once; after that OutOfMemory names the request and what is in use.
// Covered by tests/unit/allocator_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "tensor/device.h"

namespace moe {

struct AllocatorStats {
  size_t in_use = 0;        // bytes handed out and not yet returned (rounded sizes)
  size_t peak_in_use = 0;   // maximum of in_use since the last reset_peak()
  size_t reserved = 0;      // bytes obtained from the system (in use + cached)
  size_t raw_allocations = 0;  // calls to the system allocator so far
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
  /// Optional cap on reserved bytes (tests use it to provoke OutOfMemory); 0 = no cap.
  void set_limit(size_t bytes) { limit_ = bytes; }
  Device device() const { return device_; }

  static size_t round_size(size_t bytes);
  /// The CPU allocator's rounding (size classes above 64 KiB, page multiples).
  static size_t round_size_host(size_t bytes);

 private:
  void* raw_alloc(size_t bytes);
  void raw_free(void* ptr);
  void release_cache_locked();

  Device device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;  // size -> block
  std::map<void*, size_t> block_sizes_;       // every live or cached block -> its rounded size
  AllocatorStats stats_;
  size_t limit_ = 0;
};

/// The process-wide allocator of a device (created on first use).
Allocator& allocator_for(Device device);

/// "1.50 GiB"-style rendering of a byte count for messages and logs.
std::string format_bytes(size_t bytes);

}  // namespace moe
