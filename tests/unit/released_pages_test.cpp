// ReleasedPages (tensor/released_pages.h): only whole pages inside the range are given back, the
// process's resident memory drops by them, and afterwards they are writable again and read as zeros while
// the partial pages at both ends keep their values.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <vector>

#include "tensor/released_pages.h"
#include "tensor/tensor.h"

using namespace moe;

namespace {
size_t resident_bytes() {  // /proc/self/statm: the second field, in pages
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}
}  // namespace

TEST_CASE("released pages: whole pages only, resident memory drops, zeros after", "[unit][released_pages]") {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  CHECK(ReleasedPages(nullptr, 0).bytes() == 0);
  {
    std::vector<char> small(page / 2, 1);
    CHECK(ReleasedPages(small.data(), small.size()).bytes() == 0);  // no whole page inside
    CHECK(small[0] == 1);
  }
  const int64_t n = 64 << 20 >> 2;  // 64 MiB of f32
  Tensor t = Tensor::empty(Shape{n}, DType::f32, Device::cpu());
  float* v = t.data<float>();
  for (int64_t i = 0; i < n; ++i) v[i] = 1.f;
  const size_t before = resident_bytes();
  // From one float past the start to one before the end: the partial end pages must stay.
  const int64_t lo = 1, hi = n - 1;
  size_t released = 0;
  {
    ReleasedPages r(v + lo, static_cast<size_t>(hi - lo) * 4);
    released = r.bytes();
    CHECK(released % page == 0);
    CHECK(released >= static_cast<size_t>(n) * 4 - 2 * page);
    CHECK(released <= static_cast<size_t>(hi - lo) * 4);
    // Resident memory falls by most of the 64 MiB (other allocations of the test may move it a little).
    CHECK(resident_bytes() + released / 2 < before);
  }
  size_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) zeros += v[i] == 0.f ? 1 : 0;
  CHECK(zeros * 4 == released);
  CHECK(v[0] == 1.f);
  CHECK(v[lo] == 1.f);  // inside the first partial page
  CHECK(v[n - 1] == 1.f);
  v[n / 2] = 3.f;  // writable again
  CHECK(v[n / 2] == 3.f);
}
