// CUDA emulator (emu/README.md): mbarriers, the 8-byte shared-memory barriers of sm_90 (PTX 9.7.13.15).
// Each has an arrival count, a phase, the arrivals the phase still needs and a transaction count (the
// bytes of asynchronous copies the phase still expects: arrive.expect_tx adds, a TMA load that lands
// subtracts). A phase completes when both reach zero; try_wait.parity(P) returns once the phase of
// parity P is complete (the emulator suspends the thread until then, as the instruction may). TMA
// loads attached to a barrier land when a thread waits on it (or at once while one waits), so a
// consumer that reads a tile without waiting reads bytes still in flight (reported). Completion
// orders what the arriving warps (and the copies' issuers) did before what the waiters do next.
// Misuse reported: a barrier used before its mbarrier.init or with no barrier after it, an address that
// is not 8-byte aligned shared memory, more arrivals than the count in one phase, a count outside
// [1, 2^20 - 1]; a phase that can never complete is a deadlock whose report says what is missing
// (arrivals, or transaction bytes expected and delivered). Covered by tests/emu/async_checker_test.cpp.
#include "mbarrier.h"

#include <algorithm>
#include <cstring>

#include "moe_emu/runtime.h"
#include "state.h"

namespace moe_emu {
namespace {
#define MOE_EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

size_t arena_offset(const Worker& w, const void* p) {
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(w.arena);
}

void check_address(ThreadState& t, const void* bar, uintptr_t pc, const char* op) {
  const auto a = reinterpret_cast<uintptr_t>(bar);
  if (!in_arena(*t.worker, a) || !shared_region(*t.worker, a, 8))
    report(t, ReportKind::out_of_bounds, pc, std::string(op) + " of an mbarrier outside shared memory", true, a);
  if (a % 8) report(t, ReportKind::misaligned, pc, std::string(op) + " of an mbarrier not 8-byte aligned", true, a);
}

/// Completes the current phase if nothing is missing; wakes the threads waiting for it.
void try_complete(Worker& w, MBarrier& m) {
  if (m.pending != 0 || m.tx != 0) return;
  ++m.phase;
  std::copy(std::begin(m.acc), std::end(m.acc), std::begin(m.done));
  std::fill(std::begin(m.acc), std::end(m.acc), 0u);
  m.pending = int(m.count);
  for (unsigned i = 0; i < w.nthreads; ++i) {
    ThreadState& o = w.threads[i];
    if (o.status == ThreadStatus::at_group && o.async.wait_object == &m && (m.phase & 1u) != o.async.wait_parity)
      make_ready(w, o);
  }
}
}  // namespace

MBarrier* find_mbarrier(Worker& w, size_t offset) {
  for (auto& m : w.async.mbarriers)
    if (m->offset == offset) return m.get();
  return nullptr;
}

MBarrier& use_mbarrier(ThreadState& t, const void* bar, uintptr_t pc, const char* op) {
  Worker& w = *t.worker;
  check_address(t, bar, pc, op);
  MBarrier* m = find_mbarrier(w, arena_offset(w, bar));
  if (!m) {
    report(t, ReportKind::async_misuse, pc,
           std::string(op) + " of an mbarrier this block never initialised (mbarrier.init)", true,
           reinterpret_cast<uintptr_t>(bar));
    static MBarrier none;  // not reached: a fatal report ends the thread
    return none;
  }
  if (m->init_epoch == w.epoch && m->init_tid != t.tid && !ordered_before(w, m->init_tid, m->init_seq, t))
    report(t, ReportKind::race, pc,
           std::string(op) +
               " of an mbarrier whose mbarrier.init by another thread is not ordered before it "
               "(a __syncthreads after the init)",
           false, reinterpret_cast<uintptr_t>(bar), m->init_tid, m->init_pc);
  return *m;
}

void land_loads(Worker& w, MBarrier& m) {
  std::vector<TmaLoad> loads;
  loads.swap(m.loads);
  for (const TmaLoad& l : loads) {
    land_tma_load(w, l);
    m.tx -= l.bytes;
    m.acc[l.tid / kWarpSize] = std::max(m.acc[l.tid / kWarpSize], l.stamp);
  }
  try_complete(w, m);
}

void attach_load(Worker& w, MBarrier& m, TmaLoad load) {
  m.loads.push_back(load);
  if (m.waiters > 0) land_loads(w, m);  // a thread waits: nothing defers the copy
}

void mbarrier_init(uint64_t* bar, unsigned count) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  check_address(t, bar, pc, "mbarrier.init");
  if (count == 0 || count >= (1u << 20))
    report(t, ReportKind::async_misuse, pc, "mbarrier.init with count " + std::to_string(count) + " (1 to 2^20 - 1)",
           true);
  check_access(t, reinterpret_cast<uintptr_t>(bar), 8, true, pc, false, true);  // a plain write of the object
  const uint64_t image = uint64_t(count) << 32 | 0x6d626172u;                   // "mbar"
  std::memcpy(bar, &image, 8);
  enable_read_stamps(w);
  flush_pending_writes(t);
  MBarrier* m = find_mbarrier(w, arena_offset(w, bar));
  if (!m) m = w.async.mbarriers.emplace_back(std::make_unique<MBarrier>()).get();
  *m = MBarrier{};
  m->offset = arena_offset(w, bar);
  m->count = count;
  m->pending = int(count);
  m->init_tid = t.tid;
  m->init_epoch = w.epoch;
  m->init_seq = w.sync_counter;
  m->init_pc = pc;
  next_stamp(w);
}

uint64_t mbarrier_arrive(uint64_t* bar, unsigned expect_tx) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  flush_pending_writes(t);
  MBarrier& m = use_mbarrier(t, bar, pc, expect_tx ? "mbarrier.arrive.expect_tx" : "mbarrier.arrive");
  const uint64_t token = m.phase;
  m.tx += expect_tx;
  publish(w, t.warp, next_stamp(w), m.acc);
  if (--m.pending < 0 && !m.overflow_reported) {
    m.overflow_reported = true;
    report(t, ReportKind::async_misuse, pc,
           "mbarrier.arrive beyond the barrier's count of " + std::to_string(m.count) +
               " in one phase (the phase waits for transaction bytes, or too many threads arrive)",
           false, reinterpret_cast<uintptr_t>(bar));
  }
  try_complete(w, m);
  return token;
}

void mbarrier_expect_tx(uint64_t* bar, unsigned bytes) {
  ThreadState& t = current_thread();
  use_mbarrier(t, bar, MOE_EMU_PC, "mbarrier.expect_tx").tx += bytes;
}

bool mbarrier_try_wait_parity(uint64_t* bar, unsigned parity) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  flush_pending_writes(t);
  MBarrier& m = use_mbarrier(t, bar, pc, "mbarrier.try_wait.parity");
  if ((m.phase & 1u) == (parity & 1u)) {  // the phase of that parity is the current one: wait for it
    ++m.waiters;
    land_loads(w, m);
    if ((m.phase & 1u) == (parity & 1u)) {
      t.async.wait_parity = parity & 1u;
      wait_in_group(t, GroupWait::mbarrier, &m, pc);
    }
    --m.waiters;
  }
  learn(w, t.warp, m.done);
  return true;
}

std::string describe_mbarrier_wait(const Worker& w, const MBarrier& m, unsigned parity) {
  std::string s = "mbarrier at shared offset " + std::to_string(m.offset) + ", waiting for the phase of parity " +
                  std::to_string(parity) + ": " + std::to_string(std::max(m.pending, 0)) + " of " +
                  std::to_string(m.count) + " arrivals pending";
  if (m.tx > 0) s += ", " + std::to_string(m.tx) + " transaction bytes expected that no copy delivers";
  if (m.tx < 0) s += ", " + std::to_string(-m.tx) + " transaction bytes delivered beyond those expected (expect_tx)";
  (void)w;
  return s + ": the phase can never complete";
}

}  // namespace moe_emu
