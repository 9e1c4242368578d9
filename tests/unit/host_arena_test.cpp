// HostArena (lib/tensor/host_arena.h) and the CPU allocator on top of it: best fit, freed neighbours
// merged and reused for other sizes, the high-water mark, release, the cap; batches of changing shapes
// reuse memory instead of raising the mark; further reservations when a range is full; under an
// address-space limit too tight for the arena, plain allocations, then an OutOfMemory naming the limit.
#include "tensor/host_arena.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "common/cpu_threads.h"
#include "common/error.h"
#include "tensor/allocator.h"
#include "tensor/host_limits.h"
#include "tensor/out_of_memory.h"

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

TEST_CASE("host arena: a further range when one is full, a request larger than any in a range of its own",
          "[tensor][allocator]") {
  constexpr size_t kMiB = size_t(1) << 20;
  HostArena a(4 * kMiB);  // ranges of 4 MiB
  char* x = static_cast<char*>(a.allocate(3 * kMiB));
  char* y = static_cast<char*>(a.allocate(3 * kMiB));  // does not fit the first range's 1 MiB rest
  CHECK(a.ranges() == 2);
  CHECK(a.address_space() == 8 * kMiB);
  CHECK(a.reserved() == 6 * kMiB);
  std::memset(x, 1, 3 * kMiB);
  std::memset(y, 2, 3 * kMiB);
  CHECK(a.allocate(kMiB) == x + 3 * kMiB);  // the first range's rest
  a.deallocate(x, 3 * kMiB);
  CHECK(a.allocate(2 * kMiB) == x);  // freed space in the first range serves another size
  char* big = static_cast<char*>(a.allocate(10 * kMiB));
  CHECK(a.ranges() == 3);
  CHECK(a.address_space() == 18 * kMiB);
  std::memset(big, 3, 10 * kMiB);
  CHECK(a.owns(big + 10 * kMiB - 1));
  CHECK(a.allocate(2 * kMiB, a.reserved()) == nullptr);  // no free block holds it, and the cap counts every range
  a.deallocate(big, 10 * kMiB);
  a.deallocate(y, 3 * kMiB);
  a.release_free();
  CHECK(a.reserved() == 4 * kMiB);  // the first range's blocks in use (2 MiB at x, 1 MiB at its top) keep its mark
  CHECK_FALSE(a.reservation_failed());
}

TEST_CASE("CPU allocator: under an address-space limit too tight for the arena, malloc, then a clear error",
          "[tensor][allocator]") {
  if (!Allocator::host_arena_enabled()) return;  // sanitizer builds have no arena (and reserve shadow memory)
  // In a child: RLIMIT_AS leaves 64 MiB. A 63 MiB block needs 66 MiB of arena (2 MiB steps and alignment),
  // so the arena cannot reserve it and the allocator falls back to malloc, which fits (and rounds later
  // large blocks to its size classes); 200 MiB fits nowhere.
  const pid_t pid = ::fork();
  if (pid == 0) {
    constexpr size_t kMiB = size_t(1) << 20;
    Allocator alloc(Device::cpu());
    (void)cpu_threads();  // settled before the limit, as a program's start does (else this case depends on order)
    rlimit r{};
    ::getrlimit(RLIMIT_AS, &r);
    r.rlim_cur = address_space_in_use() + 64 * kMiB;
    if (::setrlimit(RLIMIT_AS, &r) != 0) ::_exit(2);
    void* p = alloc.allocate(63 * kMiB);
    if (!p) ::_exit(3);
    std::memset(p, 1, 63 * kMiB);
    alloc.deallocate(p);
    alloc.release_cache();
    // After the fallback a large block is a malloc of its own: the size classes, not page multiples.
    void* q = alloc.allocate(kMiB + 1000);
    if (alloc.stats().in_use != Allocator::round_size_host(kMiB + 1000)) ::_exit(6);
    alloc.deallocate(q);
    alloc.release_cache();
    try {
      alloc.allocate(200 * kMiB);
      ::_exit(4);
    } catch (const OutOfMemory& e) {
      const std::string m = e.what();
      ::_exit(m.find("a request for 200.00 MiB failed") != std::string::npos &&
                      m.find("address space limited to") != std::string::npos
                  ? 0
                  : 5);
    }
  }
  int status = 1;
  ::waitpid(pid, &status, 0);
  INFO("child exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("out of memory outside the allocator: the allocator's error text", "[tensor][allocator]") {
  // What ops/cpu_gemm.cpp throws when oneDNN cannot allocate its packing buffers.
  try {
    throw_out_of_memory(Device::cpu(), "a request for oneDNN sgemm's packing buffers");
    FAIL("throw_out_of_memory returned");
  } catch (const OutOfMemory& e) {
    CHECK_THAT(e.what(), Catch::Contains("out of memory on cpu: a request for oneDNN sgemm's packing buffers failed") &&
                             Catch::Contains("in use by tensors") && Catch::Contains("(peak "));
  }
}
