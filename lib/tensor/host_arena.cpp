// host_arena.h implementation. In each reserved range, free blocks are kept twice: by offset (to merge
// neighbours) and by size (best fit: the smallest block that holds the request, split from its start).
// Above a range's mark lies untouched address space; a request no free block holds extends a mark,
// taking over a free block that ends at it, and one no range can hold gets a range of its own.
// Covered by tests/unit/host_arena_test.cpp.
#include "tensor/host_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "common/cpu_threads.h"
#include "common/error.h"
#include "tensor/host_limits.h"

namespace moe {

namespace {
// Pages are enabled in 2 MiB steps, 2 MiB-aligned, so that where the system gives every process transparent huge
// pages (enabled: always) the arena's are huge. It asks for none itself (no MADV_HUGEPAGE): on a VM whose host
// takes back free memory (virtio-balloon free page reporting) fresh huge pages faulted in at about 0.4 GB/s,
// which made one-off decoding runs 5-25% slower (docs/PERF.md, "Huge pages").
constexpr size_t kHuge = size_t(2) << 20;
constexpr size_t kNoLimitReservation = size_t(1) << 40;
size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }
}  // namespace

class HostArena::Range {
 public:
  /// Reserves `capacity` bytes (a multiple of 2 MiB) of addresses; nullptr when the system refuses.
  static std::unique_ptr<Range> reserve(size_t capacity) {
    // PROT_NONE reserves addresses without committing memory (no overcommit accounting either); one spare
    // huge page lets the base be aligned to 2 MiB.
    void* p = ::mmap(nullptr, capacity + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    auto r = std::unique_ptr<Range>(new Range);
    r->map_ = p;
    r->capacity_ = capacity;
    r->base_ = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(p), kHuge));
    return r;
  }
  ~Range() { ::munmap(map_, capacity_ + kHuge); }

  bool owns(const void* ptr) const {
    const char* c = static_cast<const char*>(ptr);
    return c >= base_ && c < base_ + capacity_;
  }
  size_t mark() const { return mark_; }
  size_t capacity() const { return capacity_; }

  /// The size of the smallest free block that holds `bytes` (0: none).
  size_t best_fit(size_t bytes) const {
    auto fit = free_by_size_.lower_bound(bytes);
    return fit == free_by_size_.end() ? 0 : fit->first;
  }
  /// `bytes` from the smallest free block that holds them (best_fit() found one).
  void* take_fit(size_t bytes) { return take(free_by_offset_.find(free_by_size_.lower_bound(bytes)->second), bytes); }

  /// `bytes` above the mark (starting inside a free block that ends at it, if any); nullptr when the mark
  /// would rise by more than `max_growth` or pass the capacity.
  void* extend(size_t bytes, size_t max_growth) {
    size_t start = mark_;
    if (!free_by_offset_.empty()) {
      auto last = std::prev(free_by_offset_.end());
      if (last->first + last->second == mark_) start = last->first;
    }
    const size_t new_mark = start + bytes;
    if (new_mark > capacity_ || new_mark - mark_ > max_growth) return nullptr;
    if (new_mark > enabled_) {
      const size_t enable_to = std::min(capacity_, round_up(new_mark, kHuge));
      if (::mprotect(base_ + enabled_, enable_to - enabled_, PROT_READ | PROT_WRITE) != 0) return nullptr;
      enabled_ = enable_to;
    }
    if (start < mark_) take(free_by_offset_.find(start), mark_ - start);
    mark_ = new_mark;
    return base_ + start;
  }

  void deallocate(void* ptr, size_t bytes) {
    size_t offset = static_cast<size_t>(static_cast<char*>(ptr) - base_);
    auto next = free_by_offset_.lower_bound(offset);
    if (next != free_by_offset_.begin()) {  // merge with the block that ends here
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        bytes += prev->second;
        take(prev, prev->second);
      }
    }
    next = free_by_offset_.lower_bound(offset);
    if (next != free_by_offset_.end() && offset + bytes == next->first) {  // and with the one that starts at its end
      bytes += next->second;
      take(next, next->second);
    }
    free_by_offset_.emplace(offset, bytes);
    free_by_size_.emplace(bytes, offset);
  }

  void release_free() {
    for (const auto& [offset, bytes] : free_by_offset_) ::madvise(base_ + offset, bytes, MADV_DONTNEED);
    if (!free_by_offset_.empty()) {  // the free block at the top goes back above the mark
      auto last = std::prev(free_by_offset_.end());
      if (last->first + last->second == mark_) {
        mark_ = last->first;
        take(last, last->second);
      }
    }
  }

 private:
  Range() = default;
  void* take(std::map<size_t, size_t>::iterator block, size_t bytes) {
    const size_t offset = block->first, have = block->second;
    auto by_size = free_by_size_.equal_range(have);
    for (auto it = by_size.first; it != by_size.second; ++it)
      if (it->second == offset) {
        free_by_size_.erase(it);
        break;
      }
    free_by_offset_.erase(block);
    if (have > bytes) {
      free_by_offset_.emplace(offset + bytes, have - bytes);
      free_by_size_.emplace(have - bytes, offset + bytes);
    }
    return base_ + offset;
  }

  void* map_ = nullptr;
  char* base_ = nullptr;
  size_t capacity_ = 0, mark_ = 0, enabled_ = 0;
  std::map<size_t, size_t> free_by_offset_;     // offset -> bytes, below the mark, merged
  std::multimap<size_t, size_t> free_by_size_;  // bytes -> offset (best fit)
};

HostArena::HostArena(size_t reservation) : reservation_(reservation ? round_up(reservation, kHuge) : 0) {}

HostArena::~HostArena() = default;

size_t HostArena::reserved() const {
  size_t total = 0;
  for (const auto& r : ranges_) total += r->mark();
  return total;
}

size_t HostArena::address_space() const {
  size_t total = 0;
  for (const auto& r : ranges_) total += r->capacity();
  return total;
}

HostArena::Range* HostArena::range_of(const void* ptr) const {
  for (const auto& r : ranges_)
    if (r->owns(ptr)) return r.get();
  return nullptr;
}

bool HostArena::owns(const void* ptr) const { return range_of(ptr) != nullptr; }

size_t HostArena::next_reservation(size_t bytes) const {
  size_t size = reservation_;
  if (!size) {
    size = kNoLimitReservation;
    const HostLimits limits = HostLimits::current();
    if (limits.cgroup_memory) size = std::min(size, limits.cgroup_memory);
    if (limits.address_space) {  // half of what is left when the threads have mapped their buffers
      const size_t in_use = address_space_in_use();
      const size_t threads = static_cast<size_t>(cpu_threads()) * kThreadAddressSpace + (size_t(256) << 20);
      const size_t left = limits.address_space > in_use + threads ? limits.address_space - in_use - threads : 0;
      size = std::min(size, left / 2);
    }
  }
  return round_up(std::max(size, bytes), kHuge);
}

void* HostArena::allocate(size_t bytes, size_t limit) {
  MOE_CHECK(bytes > 0 && bytes % kPage == 0, "host arena: ", bytes, " bytes is not a positive page multiple");
  Range* fit = nullptr;  // best fit over every range
  size_t fit_size = 0;
  for (const auto& r : ranges_) {
    const size_t s = r->best_fit(bytes);
    if (s && (!fit || s < fit_size)) fit = r.get(), fit_size = s;
  }
  if (fit) return fit->take_fit(bytes);
  const size_t total = reserved();
  if (limit && total >= limit) return nullptr;
  const size_t max_growth = limit ? limit - total : SIZE_MAX;
  for (const auto& r : ranges_)
    if (void* p = r->extend(bytes, max_growth)) {
      ++growths_;
      return p;
    }
  if (bytes > max_growth) return nullptr;
  // A further range: the size the limits allow, else just the request.
  std::unique_ptr<Range> range = Range::reserve(next_reservation(bytes));
  if (!range) range = Range::reserve(round_up(bytes, kHuge));
  if (!range) {
    reservation_failed_ = true;
    return nullptr;
  }
  ranges_.push_back(std::move(range));
  void* p = ranges_.back()->extend(bytes, max_growth);
  if (p) ++growths_;
  return p;
}

void HostArena::deallocate(void* ptr, size_t bytes) {
  Range* r = range_of(ptr);
  MOE_CHECK(r && bytes % kPage == 0, "host arena: freeing a block it did not hand out");
  r->deallocate(ptr, bytes);
}

void HostArena::release_free() {
  for (const auto& r : ranges_) r->release_free();
}

}  // namespace moe
