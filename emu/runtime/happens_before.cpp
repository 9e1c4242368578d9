// CUDA emulator (emu/README.md): happens-before between the warps of a block beyond __syncthreads.
// Every sync event takes a new stamp from the worker's counter (Worker::sync_counter), and each shared
// access records the counter when it is made, so "stamp s is below the stamp of warp Y's arrival"
// means "made before it". A named barrier or an mbarrier gathers, at each arrival, the arriving warp's
// stamp and what that warp already knew (publish); a thread released by it takes all of that in
// (learn). The race checker then treats an access of warp Y with stamp below knows[X][Y] as ordered
// before warp X's accesses (checker.cpp), and knows[X][X] orders the lanes of warp X among themselves.
// Warps, not threads, are the unit: when one lane of a warp learns of an access, the checker counts the
// whole warp ordered after it (it may miss a race between lanes of a warp, never report a false one). Covered by
// tests/emu/async_checker_test.cpp.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "state.h"

namespace moe_emu {

void order_all_warps(Worker& w) {
  const uint32_t stamp = next_stamp(w);
  for (auto& row : w.async.knows) std::fill(std::begin(row), std::end(row), stamp);
}

void learn(Worker& w, int to, const uint32_t (&clock)[kBlockWarps]) {
  uint32_t* row = w.async.knows[to];
  for (int v = 0; v < kBlockWarps; ++v) row[v] = std::max(row[v], clock[v]);
}

void publish(Worker& w, int from, uint32_t stamp, uint32_t (&clock)[kBlockWarps]) {
  const uint32_t* row = w.async.knows[from];
  for (int v = 0; v < kBlockWarps; ++v) clock[v] = std::max(clock[v], row[v]);
  clock[from] = std::max(clock[from], stamp);
}

void enable_read_stamps(Worker& w) {
  if (w.async.read_stamps) return;
  const size_t bytes = w.arena_bytes * kBlockWarps * sizeof(uint32_t);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "moe-emu: cannot map %zu bytes of read stamps\n", bytes);
    std::abort();
  }
  w.async.read_stamps = static_cast<uint32_t*>(p);  // zero: read before any stamp, ordered by every barrier
}

}  // namespace moe_emu
