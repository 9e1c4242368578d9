// ReleasedPages: memory a program keeps allocated but will not read while this object lives, given back
// to the system. The whole pages inside [data, data + bytes) (a range smaller than a page, or its partial
// first and last pages, stay as they are) are dropped (madvise MADV_DONTNEED: no longer resident) and made
// inaccessible (mprotect PROT_NONE), so that a read of them stops the program at once instead of seeing
// zeros; when the object ends they are made readable and writable again and read as zeros.
// Used by int8 inference for the f32 values of the weights it replaces (models/int8_model.h).
// CPU memory only (anonymous private mappings: the host arena's ranges or malloc's).
// Covered by tests/unit/released_pages_test.cpp.
#pragma once
#include <cstddef>

namespace moe {

class ReleasedPages {
 public:
  ReleasedPages(void* data, size_t bytes);
  ~ReleasedPages();
  ReleasedPages(ReleasedPages&& o) noexcept;
  ReleasedPages& operator=(ReleasedPages&&) = delete;
  ReleasedPages(const ReleasedPages&) = delete;
  ReleasedPages& operator=(const ReleasedPages&) = delete;
  /// The bytes given back: whole pages, 0 when the range holds none.
  size_t bytes() const { return bytes_; }

 private:
  void* begin_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace moe
