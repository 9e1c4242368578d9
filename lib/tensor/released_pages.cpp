// released_pages.h implementation. Covered by tests/unit/released_pages_test.cpp.
#include "tensor/released_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace moe {

ReleasedPages::ReleasedPages(void* data, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (start + page - 1) / page * page, end = (start + bytes) / page * page;
  if (end <= first) return;
  begin_ = reinterpret_cast<void*>(first);
  bytes_ = end - first;
  MOE_CHECK(::madvise(begin_, bytes_, MADV_DONTNEED) == 0 && ::mprotect(begin_, bytes_, PROT_NONE) == 0,
            "releasing ", bytes_, " bytes of memory: ", std::strerror(errno));
}

ReleasedPages::ReleasedPages(ReleasedPages&& o) noexcept : begin_(o.begin_), bytes_(o.bytes_) {
  o.begin_ = nullptr;
  o.bytes_ = 0;
}

ReleasedPages::~ReleasedPages() {
  // The allocator owns these pages again: failing here would leave them unusable, so it is fatal.
  if (bytes_ && ::mprotect(begin_, bytes_, PROT_READ | PROT_WRITE) != 0) std::abort();
}

}  // namespace moe
