// HostArena (lib/tensor/host_arena.h) and the CPU allocator on top of it: best fit, freed neighbours
// merged and reused for other sizes, the high-water mark, release, the cap; batches of changing shapes
// reuse memory instead of raising the mark.
#include "tensor/host_arena.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "tensor/allocator.h"

using namespace moe;
namespace {
constexpr size_t kP = HostArena::kPage;
}

TEST_CASE("host arena: best fit, merging neighbours, reuse for another size", "[tensor][allocator]") {
  HostArena a;
  char* x = static_cast<char*>(a.allocate(4 * kP));
  char* y = static_cast<char*>(a.allocate(2 * kP));
  char* z = static_cast<char*>(a.allocate(8 * kP));
  CHECK(y == x + 4 * kP);
  CHECK(z == y + 2 * kP);
  CHECK(a.reserved() == 14 * kP);
  std::memset(x, 1, 14 * kP);  // the pages are writable
  a.deallocate(x, 4 * kP);
  a.deallocate(y, 2 * kP);         // merges with x's range: 6 pages free at the start
  CHECK(a.allocate(5 * kP) == x);  // a size neither block had, without raising the mark
  CHECK(a.reserved() == 14 * kP);
  CHECK(a.allocate(kP) == x + 5 * kP);  // best fit: the one-page rest
  CHECK(a.growths() == 3);
  a.deallocate(z, 8 * kP);  // the free top goes back above the mark on release
  a.release_free();
  CHECK(a.reserved() == 6 * kP);
  // a request larger than any free range extends the mark from a free range that ends at it
  a.deallocate(x + 5 * kP, kP);
  a.release_free();
  CHECK(a.reserved() == 5 * kP);
  CHECK(a.allocate(3 * kP, 8 * kP) == x + 5 * kP);
  CHECK(a.allocate(3 * kP, 8 * kP) == nullptr);  // past the cap
  CHECK_THROWS(a.allocate(100));                 // not a page multiple
}

TEST_CASE("CPU allocator: batches of changing shapes reuse freed memory", "[tensor][allocator]") {
  // (a growing tensor: tests/unit/tensor_test.cpp; sanitizer builds have no arena)
  if (!Allocator::host_arena_enabled()) return;
  Allocator a(Device::cpu());
  size_t mark = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<void*> live;
    for (size_t mib : {3, 5, 2, 7}) live.push_back(a.allocate((mib << 20) - 4096 * round));
    for (void* p : live) a.deallocate(p);
    if (round == 0) mark = a.stats().reserved;
  }
  CHECK(a.stats().reserved == mark);  // the first batch's pages served all the others
  CHECK(a.stats().in_use == 0);
  a.release_cache();
  CHECK(a.stats().reserved == 0);
}
