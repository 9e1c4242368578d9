// HostArena: where the CPU allocator's large blocks live. One reserved range of address space (no
// memory is committed until touched) handed out best-fit in page multiples; a freed range merges with
// its free neighbours and serves any later size, so pages touched once are reused instead of new ones
// being faulted in. Why: first-touch page zeroing in the kernel was the system time of CPU decoding
// (issue 13, docs/PERF.md): a cache of fixed-size blocks reserved about twice the peak in use, because
// tensors that grow by a step at a time never fit a freed block of an earlier size.
// reserved() is the high-water mark: every page below it may be resident; release_free() gives the free
// ranges' pages back (madvise) and lowers the mark to the highest block in use.
// Covered by tests/unit/host_arena_test.cpp and, through Allocator, by every CPU test.
#pragma once
#include <cstddef>
#include <map>

namespace moe {

class HostArena {
 public:
  /// Reserves `address_space` bytes of addresses (PROT_NONE; pages are enabled as the mark rises).
  explicit HostArena(size_t address_space = size_t(1) << 40);
  ~HostArena();
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;

  /// A block of `bytes` (a multiple of kPage), or nullptr when the mark would pass `limit` (0: none)
  /// or the address space is exhausted.
  void* allocate(size_t bytes, size_t limit = 0);
  /// Returns a block; it merges with free neighbours (and with the free space above the mark).
  void deallocate(void* ptr, size_t bytes);
  /// Gives the pages of every free range back to the system and lowers the mark.
  void release_free();
  /// The high-water mark in bytes (what the system may have committed for the arena).
  size_t reserved() const { return mark_; }
  /// How many times the mark rose (the arena's calls for fresh pages).
  size_t growths() const { return growths_; }
  bool owns(const void* ptr) const;

  static constexpr size_t kPage = 4096;

 private:
  void* take(std::map<size_t, size_t>::iterator range, size_t bytes);
  void insert_free(size_t offset, size_t bytes);

  char* base_ = nullptr;
  size_t capacity_ = 0, mark_ = 0, enabled_ = 0, growths_ = 0;
  std::map<size_t, size_t> free_by_offset_;     // offset -> bytes, below the mark, merged
  std::multimap<size_t, size_t> free_by_size_;  // bytes -> offset (best fit)
};

}  // namespace moe
