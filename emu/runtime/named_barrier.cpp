// CUDA emulator (emu/README.md): named barriers, PTX's bar.sync / bar.arrive with a barrier id (0-15)
// and a thread count (a multiple of the warp size). The barrier completes when `count` threads have
// arrived; bar.sync waits for that, bar.arrive does not. Completion orders what every arriving warp
// did before arriving before what the waiting warps do next (happens_before.cpp), and a warp whose 32
// lanes all arrived is also ordered among its lanes. Misuse reported: an id above 15, a count that is
// not a positive multiple of 32 or exceeds the block, threads naming one barrier with different counts;
// a barrier that never completes leaves its waiters deadlocked (the scheduler's report names it).
// Covered by tests/emu/async_checker_test.cpp and tests/gpu/ptx_instructions_parity_test.cpp.
#include <algorithm>

#include "moe_emu/runtime.h"
#include "state.h"

namespace moe_emu {

void named_barrier(unsigned id, unsigned threads, bool wait) {
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  const char* op = wait ? "bar.sync" : "bar.arrive";
  const unsigned block_threads = (w.nthreads + kWarpSize - 1) / kWarpSize * kWarpSize;
  if (id >= unsigned(kNamedBarriers))
    report(t, ReportKind::warp_misuse, pc, std::string(op) + " with barrier id " + std::to_string(id) + " (0 to 15)",
           true);
  if (threads == 0 || threads % kWarpSize || threads > block_threads)
    report(t, ReportKind::warp_misuse, pc,
           std::string(op) + " with a thread count of " + std::to_string(threads) +
               ": a positive multiple of 32 no larger than the block (" + std::to_string(block_threads) + ")",
           true);
  flush_pending_writes(t);
  enable_read_stamps(w);
  NamedBarrier& b = w.async.named[id];
  if (b.arrived == 0) {
    b.expected = threads, b.pc = pc;
    std::fill(std::begin(b.acc), std::end(b.acc), 0u);
    std::fill(std::begin(b.lanes), std::end(b.lanes), 0u);
  } else if (b.expected != threads) {
    report(t, ReportKind::warp_misuse, pc,
           std::string(op) + " " + std::to_string(id) + " with " + std::to_string(threads) +
               " threads while threads already waiting there named " + std::to_string(b.expected),
           true, 0, -1, b.pc);
  }
  publish(w, t.warp, next_stamp(w), b.acc);
  b.lanes[t.warp] |= 1u << t.lane;
  if (++b.arrived < b.expected) {
    if (wait) wait_in_group(t, GroupWait::named_barrier, &b, pc);
    return;
  }
  // Complete: the waiters (and this thread, if it syncs) learn what every arriving warp did before.
  const uint32_t done = next_stamp(w);
  for (int v = 0; v < kBlockWarps; ++v)
    if (b.lanes[v] == 0xffffffffu) w.warps[size_t(v)].last_full_sync = done;
  for (unsigned i = 0; i < w.nthreads; ++i) {
    ThreadState& o = w.threads[i];
    if (o.status == ThreadStatus::at_group && o.async.wait_object == &b) {
      learn(w, o.warp, b.acc);
      make_ready(w, o);
    }
  }
  if (wait) learn(w, t.warp, b.acc);
  b.arrived = 0;
}

}  // namespace moe_emu
