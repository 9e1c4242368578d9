// CUDA emulator (emu/README.md): the block-level side of Hopper's asynchronous instructions: a block
// starts with no barrier, mbarrier or warpgroup collective and every warp ordered; when no thread can
// run, deferred TMA loads land before the block counts as deadlocked, and a deadlock report says what
// each kind of wait lacks; a thread's end completes its TMA stores and reports a wgmma never waited for.
// fence.proxy.async makes a thread's earlier shared-memory writes visible to the async proxy: wgmma and
// TMA stores read only bytes written by TMA loads or fenced after their last write (check_async_read).
// Covered by tests/emu/async_checker_test.cpp.
#include <algorithm>

#include "async_ops.h"
#include "mbarrier.h"
#include "moe_emu/runtime.h"

namespace moe_emu {

void reset_async(Worker& w) {
  AsyncBlockState& a = w.async;
  for (NamedBarrier& b : a.named) b = NamedBarrier{};
  a.mbarriers.clear();
  for (WarpgroupCollective& c : a.warpgroup) c = WarpgroupCollective{};
  std::fill(std::begin(a.regs), std::end(a.regs), 0u);
  order_all_warps(w);
}

bool settle_async(Worker& w) {
  const size_t ready = w.ready.size();
  for (auto& m : w.async.mbarriers)
    if (!m->loads.empty()) land_loads(w, *m);
  return w.ready.size() > ready;
}

std::string describe_group_wait(const Worker& w, const ThreadState& t) {
  switch (t.async.wait) {
    case GroupWait::named_barrier: {
      const auto* b = static_cast<const NamedBarrier*>(t.async.wait_object);
      return "bar.sync " + std::to_string(b - w.async.named) + " waits for " + std::to_string(b->expected) +
             " threads, " + std::to_string(b->arrived) + " arrived";
    }
    case GroupWait::mbarrier:
      return describe_mbarrier_wait(w, *static_cast<const MBarrier*>(t.async.wait_object), t.async.wait_parity);
    case GroupWait::warpgroup: {
      const auto* c = static_cast<const WarpgroupCollective*>(t.async.wait_object);
      return describe_warpgroup_wait(w, *c, int(c - w.async.warpgroup));
    }
    case GroupWait::none:
      break;
  }
  return "nothing";
}

void finish_async(ThreadState& t) {
  finish_bulk(t);
  finish_wgmma(t);
}

void fence_proxy_async() {
  ThreadState& t = current_thread();
  flush_pending_writes(t);
  t.async.proxy_fence = next_stamp(*t.worker);
}

void check_in_flight_write(ThreadState& t, size_t off, size_t bytes, uintptr_t pc) {
  const uintptr_t wgmma = wgmma_reads(t, off, bytes), bulk = wgmma ? 0 : bulk_reads(t, off, bytes);
  if (!wgmma && !bulk) return;
  report(t, ReportKind::async_misuse, pc,
         std::string("write of shared memory (offset ") + std::to_string(off) + ") that " +
             (wgmma ? "a wgmma.mma_async" : "a TMA store") + " of this thread reads, before the " +
             (wgmma ? "wgmma.wait_group" : "cp.async.bulk.wait_group") + " that covers it [issued at " +
             source_line(wgmma ? wgmma : bulk) + "]",
         false);
}

void check_async_read(ThreadState& t, uintptr_t addr, size_t bytes, uintptr_t pc, const char* reader) {
  check_access(t, addr, bytes, false, pc, false, false);
  Worker& w = *t.worker;
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  for (size_t i = 0; i < bytes; ++i) {
    const ShadowByte& b = w.shadow[off + i];
    if (b.init_gen != w.block_gen || b.async_proxy || b.async_pending) continue;
    const ThreadState& writer = w.threads[b.w_tid];
    if (writer.async.proxy_fence > b.w_seq) continue;
    report(t, ReportKind::async_misuse, pc,
           std::string(reader) + " reads shared memory (offset " + std::to_string(off + i) +
               ") that a thread wrote with no fence.proxy.async after the write: the async proxy may not see it",
           false, addr + i, b.w_tid, w.shadow_pcs[off + i].write);
    return;
  }
}

}  // namespace moe_emu
