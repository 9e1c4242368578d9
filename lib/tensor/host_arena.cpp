// host_arena.h implementation. Free ranges are kept twice: by offset (to merge neighbours) and by size
// (best fit: the smallest range that holds the request, split from its start). Above the mark lies
// untouched address space; a request no free range holds extends the mark, taking over a free range
// that ends at it. Covered by tests/unit/host_arena_test.cpp.
#include "tensor/host_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "common/error.h"

namespace moe {

namespace {
constexpr size_t kHuge = size_t(2) << 20;  // pages are enabled in 2 MiB steps (transparent huge pages)
}

HostArena::HostArena(size_t address_space) : capacity_(address_space / kHuge * kHuge) {
  // PROT_NONE reserves addresses without committing memory (no overcommit accounting either); one spare
  // huge page lets the base be aligned to 2 MiB.
  void* p = ::mmap(nullptr, capacity_ + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  MOE_CHECK(p != MAP_FAILED, "host arena: cannot reserve ", capacity_ >> 30, " GiB of address space");
  base_ = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) / kHuge * kHuge);
}

HostArena::~HostArena() {
  if (base_) ::munmap(base_, capacity_);
}

bool HostArena::owns(const void* ptr) const {
  const char* c = static_cast<const char*>(ptr);
  return c >= base_ && c < base_ + capacity_;
}

void* HostArena::take(std::map<size_t, size_t>::iterator range, size_t bytes) {
  const size_t offset = range->first, have = range->second;
  auto by_size = free_by_size_.equal_range(have);
  for (auto it = by_size.first; it != by_size.second; ++it)
    if (it->second == offset) {
      free_by_size_.erase(it);
      break;
    }
  free_by_offset_.erase(range);
  if (have > bytes) {
    free_by_offset_.emplace(offset + bytes, have - bytes);
    free_by_size_.emplace(have - bytes, offset + bytes);
  }
  return base_ + offset;
}

void* HostArena::allocate(size_t bytes, size_t limit) {
  MOE_CHECK(bytes > 0 && bytes % kPage == 0, "host arena: ", bytes, " bytes is not a positive page multiple");
  if (auto fit = free_by_size_.lower_bound(bytes); fit != free_by_size_.end())
    return take(free_by_offset_.find(fit->second), bytes);
  // Extend the mark, starting inside a free range that ends at it, if there is one.
  size_t start = mark_;
  if (!free_by_offset_.empty()) {
    auto last = std::prev(free_by_offset_.end());
    if (last->first + last->second == mark_) start = last->first;
  }
  const size_t new_mark = start + bytes;
  if (new_mark > capacity_ || (limit && new_mark > limit)) return nullptr;
  if (new_mark > enabled_) {
    const size_t enable_to = std::min(capacity_, (new_mark + kHuge - 1) / kHuge * kHuge);
    if (::mprotect(base_ + enabled_, enable_to - enabled_, PROT_READ | PROT_WRITE) != 0) return nullptr;
    ::madvise(base_ + enabled_, enable_to - enabled_, MADV_HUGEPAGE);  // advice: without THP it changes nothing
    enabled_ = enable_to;
  }
  if (start < mark_) take(free_by_offset_.find(start), mark_ - start);
  mark_ = new_mark;
  ++growths_;
  return base_ + start;
}

void HostArena::insert_free(size_t offset, size_t bytes) {
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.begin()) {  // merge with the range that ends here
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

void HostArena::deallocate(void* ptr, size_t bytes) {
  MOE_CHECK(owns(ptr) && bytes % kPage == 0, "host arena: freeing a block it did not hand out");
  insert_free(static_cast<size_t>(static_cast<char*>(ptr) - base_), bytes);
}

void HostArena::release_free() {
  for (const auto& [offset, bytes] : free_by_offset_) ::madvise(base_ + offset, bytes, MADV_DONTNEED);
  if (!free_by_offset_.empty()) {  // the free range at the top goes back above the mark
    auto last = std::prev(free_by_offset_.end());
    if (last->first + last->second == mark_) {
      mark_ = last->first;
      take(last, last->second);
    }
  }
}

}  // namespace moe
