// HostArena: where the CPU allocator's large blocks live. Reserved ranges of address space (no memory is
// committed until touched) handed out best-fit in page multiples; a freed range merges with its free
// neighbours and serves any later size, so pages touched once are reused instead of new ones being
// faulted in. Why: first-touch page zeroing in the kernel was the system time of CPU decoding (issue 13,
// docs/PERF.md): a cache of fixed-size blocks reserved about twice the peak in use, because tensors that
// grow by a step at a time never fit a freed block of an earlier size.
// Reservations fit the limits found (host_limits.h): without any, one range of 1 TiB; under an address-space
// limit (ulimit -v), half of the address space left at the time once every CPU thread has mapped its
// buffers (common/cpu_threads.h: kThreadAddressSpace), and under a cgroup memory limit, at most that limit.
// When a request fits no range, a further one is reserved (at least the request); when no reservation can be
// made, allocate() returns nullptr and reservation_failed() says so (the allocator then falls back to plain
// allocations).
// reserved() is the high-water mark: every page below the marks may be resident; release_free() gives the
// free ranges' pages back (madvise) and lowers the marks to the highest blocks in use.
// Covered by tests/unit/host_arena_test.cpp and, through Allocator, by every CPU test.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <vector>

namespace moe {

class HostArena {
 public:
  /// `reservation`: bytes of address space reserved at a time (0: sized by the limits found, see above).
  explicit HostArena(size_t reservation = 0);
  ~HostArena();
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;

  /// A block of `bytes` (a multiple of kPage), or nullptr when the marks would pass `limit` (0: none) in
  /// total or no address space can be reserved for it.
  void* allocate(size_t bytes, size_t limit = 0);
  /// Returns a block; it merges with free neighbours (and with the free space above its range's mark).
  void deallocate(void* ptr, size_t bytes);
  /// Gives the pages of every free range back to the system and lowers the marks.
  void release_free();
  /// The high-water marks in bytes, summed (what the system may have committed for the arena).
  size_t reserved() const;
  /// How many times a mark rose (the arena's calls for fresh pages).
  size_t growths() const { return growths_; }
  /// Address space reserved, in how many ranges.
  size_t address_space() const;
  size_t ranges() const { return ranges_.size(); }
  /// True once a reservation failed (the address space is exhausted or the system refused).
  bool reservation_failed() const { return reservation_failed_; }
  bool owns(const void* ptr) const;

  static constexpr size_t kPage = 4096;

 private:
  class Range;  // one reserved range with its own mark and free lists (host_arena.cpp)
  Range* range_of(const void* ptr) const;
  size_t next_reservation(size_t bytes) const;

  std::vector<std::unique_ptr<Range>> ranges_;
  size_t reservation_ = 0, growths_ = 0;
  bool reservation_failed_ = false;
};

}  // namespace moe
